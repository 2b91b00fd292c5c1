{{/* The chart's name, or nameOverride. */}}
{{- define "nudge.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name: fullnameOverride, else the release name when it
holds the chart's name, else release-chart. Names every object. */}}
{{- define "nudge.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "nudge.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nudge.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- with .Values.reloader.matchLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "nudge.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "nudge.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* reloader.serviceAccount (Reloader's chart) counts as serviceAccount:
created unless either says not, named by either. */}}
{{- define "nudge.serviceAccountName" -}}
{{- $name := (.Values.reloader.serviceAccount | default dict).name | default .Values.serviceAccount.name }}
{{- if include "nudge.createServiceAccount" . }}
{{- default (include "nudge.fullname" .) $name }}
{{- else }}
{{- required "serviceAccount.name (or reloader.serviceAccount.name) is required when the ServiceAccount is not created" $name }}
{{- end }}
{{- end }}

{{/* "true" when the chart creates the ServiceAccount. */}}
{{- define "nudge.createServiceAccount" -}}
{{- $r := .Values.reloader.serviceAccount | default dict }}
{{- if and .Values.serviceAccount.create (or (not (hasKey $r "create")) $r.create) }}true{{ end }}
{{- end }}

{{/* "true" when leader election is on: reloader.enableHA or more than one
replica. */}}
{{- define "nudge.leaderElect" -}}
{{- if or .Values.reloader.enableHA (gt (int (include "nudge.replicas" .)) 1) ((.Values.sharding | default dict).shards) }}true{{ end }}
{{- end }}

{{/* "true" when nudge handles Argo Rollouts: unless reloader.isArgoRollouts
is false (null means true too). */}}
{{- define "nudge.rollouts" -}}
{{- $v := .Values.reloader.isArgoRollouts }}
{{- if or (not (kindIs "bool" $v)) $v }}true{{ end }}
{{- end }}

{{/* "true" when nudge re-creates Jobs. */}}
{{- define "nudge.jobs" -}}
{{- if and .Values.recreateJobs (not .Values.reloader.ignoreJobs) }}true{{ end }}
{{- end }}

{{/* "true" when nudge starts Jobs from CronJobs. */}}
{{- define "nudge.cronJobStartJob" -}}
{{- if and .Values.cronJobStartJob (not .Values.reloader.ignoreCronJobs) }}true{{ end }}
{{- end }}

{{/* A comma-separated string or a list, as Reloader's chart takes both, to a
comma-separated string without blanks or empty entries. */}}
{{- define "nudge.csv" -}}
{{- $in := . }}
{{- if kindIs "string" $in }}{{ $in = splitList "," $in }}{{ end }}
{{- $out := list }}
{{- range $in }}{{ $s := trim (toString .) }}{{ if $s }}{{ $out = append $out $s }}{{ end }}{{ end }}
{{- join "," $out }}
{{- end }}

{{/* The namespace of every namespaced object of the chart: the top-level
namespace, as Reloader's chart reads it (.Values.namespace | default
.Release.Namespace), else the release's. */}}
{{- define "nudge.namespace" -}}
{{- .Values.namespace | default .Release.Namespace }}
{{- end }}

{{/* The namespaces of reloader.namespaces, as a list (empty: all). */}}
{{- define "nudge.namespaces" -}}
{{- $csv := include "nudge.csv" .Values.reloader.namespaces }}
{{- if $csv }}{{ splitList "," $csv | toJson }}{{ else }}[]{{ end }}
{{- end }}

{{/* The admission webhook's namespaceSelector, as JSON ("" for every
namespace): the namespaces nudge acts in, as its flags name them
(admission.NamespaceSelector): reloader.namespaces, or the release
namespace with watchGlobally=false (In), but reloader.ignoreNamespaces
(NotIn), and the terms of reloader.namespaceSelector. That selector is read
as nudge reads --namespace-selector (options.ParseSelector: double quotes
dropped, single quotes around it or a term dropped, Reloader's "key:value",
"key:*" and "key=*"), then as a label selector, each equality an In and each
inequality a NotIn. */}}
{{- define "nudge.webhookNamespaceSelector" -}}
{{- $r := .Values.reloader }}
{{- $exprs := list }}
{{- $names := include "nudge.namespaces" . | fromJsonArray }}
{{- if not $r.watchGlobally }}{{ $names = list (include "nudge.namespace" .) }}{{ end }}
{{- with $names }}
{{- $exprs = append $exprs (dict "key" "kubernetes.io/metadata.name" "operator" "In" "values" .) }}
{{- end }}
{{- with and $r.watchGlobally (include "nudge.csv" $r.ignoreNamespaces) }}
{{- $exprs = append $exprs (dict "key" "kubernetes.io/metadata.name" "operator" "NotIn" "values" (splitList "," .)) }}
{{- end }}
{{- $v := trim (toString ($r.namespaceSelector | default "")) }}
{{- if and (ge (len $v) 2) (hasPrefix "'" $v) (hasSuffix "'" $v) }}{{ $v = trimSuffix "'" (trimPrefix "'" $v) }}{{ end }}
{{- $terms := list }}
{{- range splitList "," (replace "\"" "" $v) }}
{{- $t := trim . }}
{{- if and (ge (len $t) 2) (hasPrefix "'" $t) (hasSuffix "'" $t) }}{{ $t = trim (trimSuffix "'" (trimPrefix "'" $t)) }}{{ end }}
{{- if and (contains ":" $t) (not (regexMatch "[=!() ]" $t)) }}
{{- $kv := regexSplit ":" $t 2 }}
{{- $t = ternary (index $kv 0) (printf "%s=%s" (index $kv 0) (index $kv 1)) (eq (index $kv 1) "*") }}
{{- else if regexMatch "^[^!=]*!=\\s*\\*\\s*$" $t }}
{{- $t = printf "!%s" (trim (regexReplaceAll "!=\\s*\\*\\s*$" $t "")) }}
{{- else if regexMatch "^[^=]*==?\\s*\\*\\s*$" $t }}
{{- $t = trim (regexReplaceAll "==?\\s*\\*\\s*$" $t "") }}
{{- end }}
{{- if $t }}{{ $terms = append $terms $t }}{{ end }}
{{- end }}
{{- $key := "([A-Za-z0-9][-A-Za-z0-9_./]*)" }}
{{- $val := "([-A-Za-z0-9_.]*)" }}
{{- range regexFindAll "[^,(]+(\\([^)]*\\))?" (join "," $terms) -1 }}
{{- $t := trim . }}
{{- if not $t }}{{ continue }}{{ end }}
{{- $expr := dict }}
{{- if regexMatch (printf "^!\\s*%s$" $key) $t }}
{{- $expr = dict "key" (trim (trimPrefix "!" $t)) "operator" "DoesNotExist" }}
{{- else if regexMatch (printf "^%s\\s+(in|notin)\\s*\\((.*)\\)$" $key) $t }}
{{- $k := regexReplaceAll (printf "^%s\\s+(in|notin)\\s*\\((.*)\\)$" $key) $t "$1" }}
{{- $op := regexReplaceAll (printf "^%s\\s+(in|notin)\\s*\\((.*)\\)$" $key) $t "$2" }}
{{- $vals := list }}
{{- range splitList "," (regexReplaceAll (printf "^%s\\s+(in|notin)\\s*\\((.*)\\)$" $key) $t "$3") }}{{ $vals = append $vals (trim .) }}{{ end }}
{{- $expr = dict "key" $k "operator" (ternary "In" "NotIn" (eq $op "in")) "values" $vals }}
{{- else if regexMatch (printf "^%s\\s*(!=|==|=)\\s*%s$" $key $val) $t }}
{{- $re := printf "^%s\\s*(!=|==|=)\\s*%s$" $key $val }}
{{- $expr = dict "key" (regexReplaceAll $re $t "$1") "operator" (ternary "NotIn" "In" (eq (regexReplaceAll $re $t "$2") "!=")) "values" (list (regexReplaceAll $re $t "$3")) }}
{{- else if regexMatch (printf "^%s$" $key) $t }}
{{- $expr = dict "key" $t "operator" "Exists" }}
{{- else }}
{{- fail (printf "reloader.namespaceSelector: the term %q cannot be written as a term of the admission webhook's namespaceSelector (in, notin, =, ==, !=, exists and !exists can)" $t) }}
{{- end }}
{{- $exprs = append $exprs $expr }}
{{- end }}
{{- with $exprs }}{{ dict "matchExpressions" . | toJson }}{{ end }}
{{- end }}

{{/* The kinds value bindings may target (valueBindings.targets), as
--value-binding-targets takes them: comma-separated Kind.group, or Kind for
the core group. */}}
{{- define "nudge.valueBindingTargets" -}}
{{- $out := list }}
{{- range .Values.valueBindings.targets }}
{{- $out = append $out (ternary .kind (printf "%s.%s" .kind .apiGroup) (eq .apiGroup "")) }}
{{- end }}
{{- join "," $out }}
{{- end }}

{{/* valueBindings.targets as a CEL map literal, Kind.group to resource, for
the admission policy. values.schema.json limits each name to characters that
need no escaping in a CEL string. */}}
{{- define "nudge.valueBindingResources" -}}
{{- $out := list }}
{{- range .Values.valueBindings.targets }}
{{- $out = append $out (printf "'%s': '%s'" (ternary .kind (printf "%s.%s" .kind .apiGroup) (eq .apiGroup "")) .resource) }}
{{- end }}
{{- printf "{%s}" (join ", " $out) }}
{{- end }}

{{/* The name of the value bindings' admission policy and its binding:
cluster-scoped, so named after the release's namespace too. */}}
{{- define "nudge.valueBindingPolicy" -}}
{{- printf "%s-%s-value-bindings" (include "nudge.fullname" .) (include "nudge.namespace" .) }}
{{- end }}

{{/* How many distinct Secrets and ConfigMaps one ValueBinding may read: the
admission policy checks the author's access to each, one authorization check
apiece, within the API server's CEL budget for one request (about 28). */}}
{{- define "nudge.valueBindingMaxSources" -}}16{{- end }}

{{/* Fails on combinations of values that have no meaning. */}}
{{- define "nudge.validate" -}}
{{- $r := .Values.reloader }}
{{- if and $r.ignoreSecrets $r.ignoreConfigMaps }}
{{- fail "reloader.ignoreSecrets and reloader.ignoreConfigMaps cannot both be true: nudge would have nothing to watch" }}
{{- end }}
{{- if and (not $r.watchGlobally) $r.namespaceSelector }}
{{- fail "reloader.namespaceSelector needs reloader.watchGlobally=true: with watchGlobally=false nudge watches the release namespace, or reloader.namespaces" }}
{{- end }}
{{- range .Values.valueBindings.targets }}
{{- if and (eq .apiGroup "") (has .resource (list "secrets" "configmaps" "pods")) }}
{{- fail (printf "valueBindings.targets cannot list %s: nudge never writes ConfigMaps, Secrets or Pods" .resource) }}
{{- end }}
{{- end }}
{{- if and .Values.valueBindings.enabled (semverCompare "<1.30-0" .Capabilities.KubeVersion.Version) }}
{{- fail "valueBindings.enabled needs Kubernetes 1.30 or later: its admission policy is admissionregistration.k8s.io/v1" }}
{{- end }}
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.enabled) }}
{{- fail "metrics.serviceMonitor.enabled needs metrics.enabled" }}
{{- end }}
{{- range $name := list "serviceMonitor" "podMonitor" }}
{{- if and (get $r $name | default dict).enabled (not $.Values.metrics.enabled) }}
{{- fail (printf "reloader.%s.enabled needs metrics.enabled" $name) }}
{{- end }}
{{- end }}
{{- end }}

{{/* The name of the admission webhook's Service, Certificate and
MutatingWebhookConfiguration (admissionWebhook.enabled). */}}
{{- define "nudge.webhookName" -}}
{{- printf "%s-webhook" (include "nudge.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The Secret of the admission webhook's serving certificate. */}}
{{- define "nudge.webhookSecret" -}}
{{- printf "%s-webhook-tls" (include "nudge.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* nudge's command-line flags, one list item a flag. */}}
{{- define "nudge.args" -}}
{{- $r := .Values.reloader }}
{{- $args := list }}
{{- $args = append $args (printf "--metrics-bind-address=%s" (ternary (printf ":%v" .Values.metrics.port) "0" .Values.metrics.enabled)) }}
{{- $args = append $args (printf "--health-probe-bind-address=:%v" .Values.probes.port) }}
{{- $args = append $args (printf "--key-secret=%s" .Values.keySecret) }}
{{- $args = append $args (printf "--settings-configmap=%s-settings" (include "nudge.fullname" .)) }}
{{- if ne .Values.crossNamespaceReferences "allow" }}
{{- $args = append $args (printf "--cross-namespace-references=%s" .Values.crossNamespaceReferences) }}
{{- end }}
{{- if .Values.allowWorkloadOverrides }}
{{- $args = append $args "--allow-workload-overrides" }}
{{- end }}
{{- $args = append $args (printf "--rollout-window=%s" .Values.rolloutWindow) }}
{{- $args = append $args (printf "--workers=%v" .Values.workers) }}
{{- if gt (int .Values.maxConcurrentRollouts) 0 }}
{{- $args = append $args (printf "--max-concurrent-rollouts=%v" .Values.maxConcurrentRollouts) }}
{{- $args = append $args (printf "--rollout-timeout=%s" .Values.rolloutTimeout) }}
{{- end }}
{{- $args = append $args (printf "--max-rollouts-per-hour=%d" (int .Values.maxRolloutsPerHour)) }}
{{- with .Values.maintenanceWindow }}
{{- $args = append $args (printf "--maintenance-window=%s" .) }}
{{- end }}
{{- $args = append $args (printf "--producer-ready-timeout=%s" .Values.producerReadyTimeout) }}
{{- $args = append $args (printf "--kube-api-qps=%v" .Values.kubeAPI.qps) }}
{{- $args = append $args (printf "--kube-api-burst=%v" .Values.kubeAPI.burst) }}
{{- if include "nudge.leaderElect" . }}
{{- $args = append $args "--leader-elect" }}
{{- /* The Lease is named after the release, as its Role grants it by name:
       two releases in one namespace never share one. */}}
{{- $args = append $args (printf "--leader-election-id=%s" (include "nudge.leaderElectionID" .)) }}
{{- end }}
{{- if include "nudge.csv" $r.namespaces }}
{{- $args = append $args (printf "--namespaces=%s" (include "nudge.csv" $r.namespaces)) }}
{{- else if not $r.watchGlobally }}
{{- /* Expanded by the kubelet from the container's env, so the manifests
       stay valid when kustomize moves them to another namespace. */}}
{{- $args = append $args "--namespaces=$(POD_NAMESPACE)" }}
{{- end }}
{{- /* With watchGlobally=false, as in Reloader's chart, ignoreNamespaces
       has no effect (the install notes say so). */}}
{{- with and $r.watchGlobally (include "nudge.csv" $r.ignoreNamespaces) }}
{{- $args = append $args (printf "--namespaces-to-ignore=%s" .) }}
{{- end }}
{{- with $r.namespaceSelector }}
{{- $args = append $args (printf "--namespace-selector=%s" .) }}
{{- end }}
{{- with (.Values.sharding | default dict).shards }}
{{- /* $(NUDGE_SHARD), the pod's ordinal, expanded by the kubelet. */}}
{{- $args = append $args (printf "--shard=$(NUDGE_SHARD)/%v" .) }}
{{- end }}
{{- with $r.resourceLabelSelector }}
{{- $args = append $args (printf "--resource-label-selector=%s" .) }}
{{- end }}
{{- if ne $r.reloadStrategy "default" }}
{{- $args = append $args (printf "--reload-strategy=%s" $r.reloadStrategy) }}
{{- end }}
{{- if $r.reloadOnCreate }}
{{- $args = append $args "--reload-on-create" }}
{{- end }}
{{- if $r.reloadOnDelete }}
{{- $args = append $args "--reload-on-delete" }}
{{- end }}
{{- if $r.ignoreSecrets }}
{{- $args = append $args "--resources-to-ignore=secrets" }}
{{- else if $r.ignoreConfigMaps }}
{{- $args = append $args "--resources-to-ignore=configMaps" }}
{{- end }}
{{- $ignored := list }}
{{- if $r.ignoreJobs }}{{ $ignored = append $ignored "jobs" }}{{ end }}
{{- if $r.ignoreCronJobs }}{{ $ignored = append $ignored "cronjobs" }}{{ end }}
{{- if not (include "nudge.rollouts" .) }}{{ $ignored = append $ignored "rollouts" }}{{ end }}
{{- if $ignored }}
{{- $args = append $args (printf "--ignored-workload-types=%s" (join "," $ignored)) }}
{{- end }}
{{- if include "nudge.jobs" . }}
{{- $args = append $args "--recreate-jobs" }}
{{- end }}
{{- if include "nudge.cronJobStartJob" . }}
{{- $args = append $args "--cronjob-start-job" }}
{{- end }}
{{- if .Values.customKinds }}
{{- $args = append $args "--custom-kinds-file=/etc/nudge/custom-kinds/custom-kinds.yaml" }}
{{- end }}
{{- if $r.autoReloadAll }}
{{- $args = append $args "--auto-reload-all" }}
{{- end }}
{{- with $r.logFormat }}
{{- $args = append $args (printf "--log-format=%s" .) }}
{{- end }}
{{- $args = append $args (printf "--log-level=%s" $r.logLevel) }}
{{- with $r.webhookUrl }}
{{- $args = append $args (printf "--webhook-url=%s" .) }}
{{- end }}
{{- if .Values.valueBindings.enabled }}
{{- $args = append $args "--value-bindings" }}
{{- with include "nudge.valueBindingTargets" . }}
{{- $args = append $args (printf "--value-binding-targets=%s" .) }}
{{- end }}
{{- if gt (int .Values.valueBindings.workers) 0 }}
{{- $args = append $args (printf "--value-binding-workers=%v" .Values.valueBindings.workers) }}
{{- end }}
{{- end }}
{{- if .Values.eviction.enabled }}
{{- $args = append $args "--enable-eviction" }}
{{- with .Values.eviction.kinds }}
{{- $args = append $args (printf "--evict-pods-of=%s" (join "," .)) }}
{{- end }}
{{- end }}
{{- if .Values.enableHTTP2 }}
{{- $args = append $args "--enable-http2" }}
{{- end }}
{{- if .Values.admissionWebhook.enabled }}
{{- $args = append $args "--admission-webhook" }}
{{- $args = append $args (printf "--admission-webhook-bind-address=:%v" .Values.admissionWebhook.port) }}
{{- $args = append $args "--admission-webhook-cert-dir=/etc/nudge/webhook-certs" }}
{{- end }}
{{- range include "nudge.reloaderArgs" . | fromJsonArray }}
{{- $args = append $args . }}
{{- end }}
{{- range .Values.extraArgs }}
{{- $args = append $args . }}
{{- end }}
{{- range $args }}
- {{ . | quote }}
{{- end }}
{{- end }}

{{/* "true" when the chart creates its roles: rbac.create and Reloader's
reloader.rbac.enabled. */}}
{{- define "nudge.createRBAC" -}}
{{- $r := .Values.reloader.rbac | default dict }}
{{- if and .Values.rbac.create (or (not (hasKey $r "enabled")) $r.enabled) }}true{{ end }}
{{- end }}

{{/* The labels of the roles and bindings: reloader.rbac.labels too. */}}
{{- define "nudge.rbacLabels" -}}
{{ include "nudge.labels" . }}
{{- with (.Values.reloader.rbac | default dict).labels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* A CEL test that every field of a dotted path from a root variable is
set: "has(a.b) && has(a.b.c)" (admission.Webhooks' matchConditions). */}}
{{- define "nudge.celHas" -}}
{{- $parts := splitList "." . }}
{{- $tests := list }}
{{- range $i, $_ := $parts }}
{{- if ge $i 1 }}{{ $tests = append $tests (printf "has(%s)" (join "." (slice $parts 0 (add1 $i)))) }}{{ end }}
{{- end }}
{{- join " && " $tests }}
{{- end }}

{{/* The matchConditions of one webhook of the admission webhook, for the
pod template at .template and the trigger's annotations at .trigger (both
dotted), with .restartAt for an Argo Rollout's spec.restartAt: as
admission.Webhooks renders them. */}}
{{- define "nudge.webhookMatchConditions" -}}
{{- $carries := dict }}
{{- $restarts := dict }}
{{- range list "oldObject" "object" }}
{{- $path := printf "%s.%s" . $.trigger }}
{{- $_ := set $carries . (printf "%s && 'nudge.dev/restarted-at' in %s" (include "nudge.celHas" $path) $path) }}
{{- $_ := set $restarts . (printf "(%s)" (include "nudge.celHas" (printf "%s.spec.restartAt" .))) }}
{{- end }}
{{- if eq .strategy "env-vars" }}
{{- $path := printf "oldObject.%s" .template }}
{{- $expr := printf "(%s) || (%s && %s.spec.containers.exists(c, has(c.env) && c.env.exists(e, e.name.startsWith('STAKATER_'))))" $carries.oldObject (include "nudge.celHas" (printf "%s.spec.containers" $path)) $path }}
{{- if .restartAt }}
{{- $expr = printf "%s || %s" $expr $restarts.oldObject }}
{{- end }}
- name: carries-the-trigger
  expression: {{ $expr | quote }}
{{- else if .restartAt }}
- name: carries-the-trigger
  expression: {{ printf "(%s) || %s" $carries.oldObject $restarts.oldObject | quote }}
- name: drops-the-trigger
  expression: {{ printf "((%s) && !(%s)) || (%s && !%s)" $carries.oldObject $carries.object $restarts.oldObject $restarts.object | quote }}
{{- else }}
- name: carries-the-trigger
  expression: {{ $carries.oldObject | quote }}
- name: drops-the-trigger
  expression: {{ printf "!(%s)" $carries.object | quote }}
{{- end }}
{{- end }}
