#!/bin/bash
# The generated certificates' hook (templates/certs-job.yaml), run by the Job's kubectl
# container after its init container made a fresh CA and serving certificate in $NEW with
# `gpuadmit certs`. Idempotent: it runs before and after every install and upgrade.
#   1. The Secret $SECRET in $NAMESPACE: created from $NEW when it is missing; kept when it
#      exists, unless this Job made it (annotation gpuadmit.io/not-after) and it ends within
#      $RENEW_DAYS: then it is replaced by the set in $NEW, whose ca.crt also holds the
#      previous CA, so that the apiserver trusts both while the pods switch to the new files.
#      A Secret without the annotation (yours) is never touched.
#   2. Its ca.crt as the caBundle of every webhook of the configurations $WEBHOOKS, where they
#      exist (not yet before the first install).
# Environment: NAMESPACE, SECRET, WEBHOOKS (the configurations' name), DAYS, RENEW_DAYS, NEW.
set -euo pipefail

now=$(date +%s)
not_after=$((now + DAYS * 86400))
renew_before=$((RENEW_DAYS * 86400))

# PEM bundle -> its first certificate
first_cert() { sed -n '1,/-----END CERTIFICATE-----/p'; }

write_secret() { # VERB CA_FILE: kubectl create or replace the Secret from $NEW, ca.crt from CA_FILE
    kubectl -n "$NAMESPACE" create secret generic "$SECRET" --type=kubernetes.io/tls \
        --from-file=tls.crt="$NEW/tls.crt" --from-file=tls.key="$NEW/tls.key" \
        --from-file=ca.crt="$2" --dry-run=client -o yaml |
        kubectl annotate --local -f - -o yaml "gpuadmit.io/not-after=$not_after" \
            "gpuadmit.io/made-by=the gpuadmit chart's certificate Job" |
        kubectl "$1" -f - >/dev/null
}

if ! existing=$(kubectl -n "$NAMESPACE" get secret "$SECRET" \
    -o 'jsonpath={.metadata.annotations.gpuadmit\.io/not-after}' 2>&1); then
    [[ $existing == *NotFound* || $existing == *"not found"* ]] || {
        echo "reading Secret $NAMESPACE/$SECRET: $existing" >&2
        exit 1
    }
    write_secret create "$NEW/ca.crt"
    echo "created Secret $NAMESPACE/$SECRET (a new CA; valid $DAYS days)"
elif [[ -z $existing ]]; then
    echo "Secret $NAMESPACE/$SECRET was not made by this Job: kept as it is"
elif [[ ! $existing =~ ^[0-9]+$ ]]; then
    echo "Secret $NAMESPACE/$SECRET: annotation gpuadmit.io/not-after is $existing, not a time" >&2
    exit 1
elif ((now + renew_before < existing)); then
    echo "Secret $NAMESPACE/$SECRET kept: $(((existing - now) / 86400)) days left"
else
    bundle=$(mktemp)
    cat "$NEW/ca.crt" >"$bundle"
    kubectl -n "$NAMESPACE" get secret "$SECRET" -o 'jsonpath={.data.ca\.crt}' | base64 -d |
        first_cert >>"$bundle"
    write_secret replace "$bundle"
    echo "renewed Secret $NAMESPACE/$SECRET (a new CA; ca.crt trusts the previous one too)"
fi

ca=$(kubectl -n "$NAMESPACE" get secret "$SECRET" -o 'jsonpath={.data.ca\.crt}')
[[ -n $ca ]] || { echo "Secret $NAMESPACE/$SECRET has no ca.crt" >&2; exit 1; }
for kind in mutatingwebhookconfiguration validatingwebhookconfiguration; do
    if ! names=$(kubectl get "$kind" "$WEBHOOKS" -o 'jsonpath={.webhooks[*].name}' 2>&1); then
        [[ $names == *NotFound* || $names == *"not found"* ]] || {
            echo "reading $kind $WEBHOOKS: $names" >&2
            exit 1
        }
        echo "no $kind $WEBHOOKS yet: its caBundle is written after the install"
        continue
    fi
    # each entry by index, after a test that the index still holds that webhook
    patch= i=0
    for name in $names; do
        patch+="${patch:+,}{\"op\":\"test\",\"path\":\"/webhooks/$i/name\",\"value\":\"$name\"}"
        patch+=",{\"op\":\"add\",\"path\":\"/webhooks/$i/clientConfig/caBundle\",\"value\":\"$ca\"}"
        i=$((i + 1))
    done
    kubectl patch "$kind" "$WEBHOOKS" --type=json -p "[$patch]" >/dev/null
    echo "$kind $WEBHOOKS: caBundle of its $i webhooks written"
done
