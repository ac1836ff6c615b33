{{/*
The webhook's namespace: .Values.namespace, or the release's. Refused when it is one the
cluster shares or one the webhooks must never judge (scripts/manifests-fill.py refuses the
same for make manifests NAMESPACE=): its Namespace object would be taken over, and
uninstalling would reach into it.
*/}}
{{- define "gpuadmit.namespace" -}}
{{- $ns := .Values.namespace | default .Release.Namespace -}}
{{- $taken := concat (list "default" "kube-system" "kube-public" "kube-node-lease") .Values.excludeNamespaces -}}
{{- if has $ns $taken -}}
{{- fail (printf "namespace %s is not the webhook's own: it is one the webhook must never judge (%s); install into a namespace for gpuadmit alone (helm install --namespace gpuadmit-system, or --set namespace=...)" $ns (join ", " (sortAlpha (uniq $taken)))) -}}
{{- end -}}
{{- $ns -}}
{{- end -}}

{{/*
Labels of every object: the overlays' app.kubernetes.io/part-of, and Helm's own (the ones
make chart-check ignores when it compares the chart with the overlays).
*/}}
{{- define "gpuadmit.labels" -}}
app.kubernetes.io/part-of: gpuadmit
{{ include "gpuadmit.helmLabels" . }}
{{- end -}}

{{/* Helm's own labels alone: for the objects the overlays' components add unlabelled. */}}
{{- define "gpuadmit.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
The namespaces no webhook is sent, as a JSON list: the control plane's, the webhook's own (so
that it can always restart) and excludeNamespaces, in the order of manifests/base.
*/}}
{{- define "gpuadmit.excludedNamespaces" -}}
{{- $own := include "gpuadmit.namespace" . -}}
{{- concat (list "kube-system" "kube-public" "kube-node-lease" $own) .Values.excludeNamespaces | uniq | toJson -}}
{{- end -}}

{{/* The Secret the pods mount: the serving certificate and key (and ca.crt). */}}
{{- define "gpuadmit.tlsSecret" -}}
{{- if or .Values.certificates.certManager .Values.certificates.generated.enabled -}}
gpuadmit-tls
{{- else -}}
{{- .Values.certificates.provided.secretName -}}
{{- end -}}
{{- end -}}

{{/*
A webhook's clientConfig; the argument is (list $ PATH). The caBundle: the provided one; for
generated certificates the Secret's ca.crt once it exists (lookup: empty under helm template
and on the first install, when the post-install hook writes it); none with cert-manager,
whose cainjector writes it.
*/}}
{{- define "gpuadmit.clientConfig" -}}
{{- $ := index . 0 -}}
{{- $path := index . 1 -}}
{{- $c := $.Values.certificates -}}
{{- if $c.certManager -}}
{{- else if $c.generated.enabled -}}
{{- $secret := lookup "v1" "Secret" (include "gpuadmit.namespace" $) "gpuadmit-tls" -}}
{{- if and $secret (index ($secret.data | default dict) "ca.crt") }}
caBundle: {{ index $secret.data "ca.crt" }}
{{- end -}}
{{- else }}
caBundle: {{ required "certificates.provided.caBundle: the CA of the serving certificate, base64" $c.provided.caBundle }}
{{- end -}}
{{- if $.Values.webhookURL }}
url: {{ printf "%s%s" (trimSuffix "/" $.Values.webhookURL) $path | quote }}
{{- else }}
service:
  name: gpuadmit
  namespace: {{ include "gpuadmit.namespace" $ }}
  path: {{ $path }}
  port: 443
{{- end -}}
{{- end -}}

{{/*
The failurePolicy of a validating webhook that only GPU objects reach: Fail when enforcing (a
GPU object is never admitted unjudged), Ignore in audit mode.
*/}}
{{- define "gpuadmit.gpuFailurePolicy" -}}
{{- if eq .Values.mode "enforce" }}Fail{{ else }}Ignore{{ end -}}
{{- end -}}

{{/*
The policy files of the rules ConfigMap, as a dict: policy.files, or the chart's copy of
rules/ with the webhook's namespace in place of gpuadmit-system (as make manifests
NAMESPACE= moves it).
*/}}
{{- define "gpuadmit.policyFiles" -}}
{{- $files := dict -}}
{{- if .Values.policy.files -}}
{{- $files = .Values.policy.files -}}
{{- else -}}
{{- $ns := include "gpuadmit.namespace" . -}}
{{- range $path, $_ := .Files.Glob "files/rules/*.yaml" -}}
{{- $text := regexReplaceAll "(^|[^\\w.-])gpuadmit-system([^\\w.-]|$)" ($.Files.Get $path) (printf "${1}%s${2}" $ns) -}}
{{- $_ := set $files (base $path) $text -}}
{{- end -}}
{{- end -}}
{{- /* the newline ends the last block scalar: toYaml trims it, and the file's own would go */ -}}
{{- printf "%s\n" (toYaml $files) -}}
{{- end -}}

{{/*
The rules ConfigMap's name: gpuadmit-rules-HASH, the hash as kustomize's configMapGenerator
computes it (sigs.k8s.io/kustomize/api v0.21 hasher.go: sha256 of the JSON of kind, name and
data, its first 10 hex digits with 0, 1, 3, a, e replaced by g, h, k, m, t), so that a policy
change is a rollout, as with the overlays, and the same policy gets the same name. The name in
that JSON is empty: kustomize looks it up as the one path segment "metadata/name", which
finds nothing.
*/}}
{{- define "gpuadmit.rulesConfigMap" -}}
{{- if .Values.policy.existingConfigMap -}}
{{- .Values.policy.existingConfigMap -}}
{{- else -}}
{{- $data := include "gpuadmit.policyFiles" . | fromYaml -}}
{{- $hash := dict "kind" "ConfigMap" "name" "" "data" $data | toJson | sha256sum | trunc 10 -}}
{{- printf "gpuadmit-rules-%s" ($hash | replace "0" "g" | replace "1" "h" | replace "3" "k" | replace "a" "m" | replace "e" "t") -}}
{{- end -}}
{{- end -}}
