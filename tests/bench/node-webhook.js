// A hand-written Node.js admission webhook, as users write one when they have nothing better:
// the https module, JSON.parse, the same facts gpuadmit checks first (GPU requests or limits,
// priorityClassName, the GPU toleration and node selector), JSON.stringify. One process.
//   node node-webhook.js CERT KEY PORT
'use strict';
const fs = require('fs');
const https = require('https');

const [cert, key, port] = process.argv.slice(2);
const GPU = /^nvidia\.com\/(gpu|gpu\.shared|mig-.*)$/;

function judge(review) {
  const req = review.request;
  const pod = req.object || {};
  const spec = pod.spec || {};
  const containers = (spec.containers || []).concat(spec.initContainers || []);
  let gpus = 0;
  for (const c of containers) {
    const r = c.resources || {};
    for (const m of [r.limits || {}, r.requests || {}])
      for (const [name, q] of Object.entries(m))
        if (GPU.test(name)) gpus = Math.max(gpus, parseInt(q, 10) || 0);
  }
  const problems = [];
  if (gpus > 0) {
    if (!spec.priorityClassName) problems.push('no priorityClassName');
    if (!(spec.tolerations || []).some((t) => t.key === 'nvidia.com/gpu'))
      problems.push('does not tolerate nvidia.com/gpu');
    if ((spec.nodeSelector || {})['nvidia.com/gpu.present'] !== 'true')
      problems.push('no GPU node selector');
  }
  const response = { uid: req.uid, allowed: problems.length === 0 };
  if (problems.length) response.status = { code: 403, message: problems.join('; ') };
  return { apiVersion: review.apiVersion, kind: 'AdmissionReview', response };
}

const server = https.createServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key),
                                     minVersion: 'TLSv1.2' }, (req, res) => {
  if (req.method === 'GET' && req.url === '/healthz') {
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.end('ok\n');
    return;
  }
  if (req.method !== 'POST' || (req.url !== '/validate' && req.url !== '/mutate')) {
    res.writeHead(404);
    res.end();
    return;
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let out;
    try {
      out = JSON.stringify(judge(JSON.parse(Buffer.concat(chunks))));
    } catch (e) {
      res.writeHead(400, { 'Content-Type': 'text/plain' });
      res.end(String(e) + '\n');
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(out);
  });
});
server.keepAliveTimeout = 30000;
server.listen(Number(port), '127.0.0.1', () => console.log('serving ' + server.address().port));
