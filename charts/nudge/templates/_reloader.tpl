{{/*
Stakater Reloader's chart values that are not nudge's own (reloader.deployment.*,
reloader.custom_annotations, reloader.podMonitor, image.name, global.imageRegistry
...), mapped onto what nudge renders, so a Reloader values file installs as it
is. Source of the names and meanings: Reloader's chart,
https://github.com/stakater/Reloader/tree/master/deployments/kubernetes/chart/reloader.
Values that mean nothing for nudge are listed by "nudge.reloaderNoEffect".
*/}}

{{/* The replicas: reloader.deployment.replicas when given, which Reloader's
chart honours only with reloader.enableHA (1 otherwise); else replicas. */}}
{{- define "nudge.replicas" -}}
{{- $d := .Values.reloader.deployment | default dict }}
{{- if not (kindIs "invalid" $d.replicas) }}
{{- if .Values.reloader.enableHA }}{{ $d.replicas | int }}{{ else }}1{{ end }}
{{- else }}
{{- .Values.replicas | int }}
{{- end }}
{{- end }}

{{/* The Lease nudge elects with: reloader.leaderElection.id, else the
release's full name. */}}
{{- define "nudge.leaderElectionID" -}}
{{- (.Values.reloader.leaderElection | default dict).id | default (include "nudge.fullname" .) }}
{{- end }}

{{/* "true" when an image value names Reloader's own image, which nudge's
chart replaces with nudge's (a Reloader values file names it). */}}
{{- define "nudge.isReloaderImage" -}}
{{- if regexMatch "(^|/)stakater/reloader(-enterprise)?$" (toString .) }}true{{ end }}
{{- end }}

{{/* The container image. global.imageRegistry with image.name, as in
Reloader's chart, else image.repository; image.digest over image.tag. An
image of Reloader's is replaced by nudge's at the chart's appVersion. */}}
{{- define "nudge.image" -}}
{{- $i := .Values.image }}
{{- $name := tpl ($i.name | default "nudge-dev/nudge") . }}
{{- $repo := tpl ($i.repository | default "ghcr.io/nudge-dev/nudge") . }}
{{- $reloader := or (include "nudge.isReloaderImage" $repo) (include "nudge.isReloaderImage" $name) }}
{{- if include "nudge.isReloaderImage" $name }}{{ $name = "nudge-dev/nudge" }}{{ end }}
{{- if include "nudge.isReloaderImage" $repo }}{{ $repo = "ghcr.io/nudge-dev/nudge" }}{{ end }}
{{- with (.Values.global | default dict).imageRegistry }}{{ $repo = printf "%s/%s" (trimSuffix "/" .) $name }}{{ end }}
{{- if $reloader }}
{{- printf "%s:%s" $repo .Chart.AppVersion }}
{{- else if $i.digest }}
{{- printf "%s@%s" $repo (tpl $i.digest .) }}
{{- else }}
{{- printf "%s:%s" $repo ($i.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/* Flags from Reloader's values that nudge's own values have no name for. */}}
{{- define "nudge.reloaderArgs" -}}
{{- $r := .Values.reloader }}
{{- $args := list }}
{{- /* reloader.custom_annotations: Reloader's key → its flag. */}}
{{- $flags := dict "auto" "auto-annotation" "configmap" "configmap-annotation" "secret" "secret-annotation"
    "configmap_auto" "configmap-auto-annotation" "secret_auto" "secret-auto-annotation"
    "search" "auto-search-annotation" "match" "search-match-annotation" "ignore" "ignore-annotation"
    "pausePeriod" "pause-deployment-annotation" "pauseTime" "pause-deployment-time-annotation" }}
{{- $custom := $r.custom_annotations | default dict }}
{{- range $key := keys $flags | sortAlpha }}
{{- with get $custom $key }}
{{- $args = append $args (printf "--%s=%s" (get $flags $key) .) }}
{{- end }}
{{- end }}
{{- if $r.enablePProf }}
{{- $args = append $args "--enable-pprof" }}
{{- with $r.pprofAddr }}{{ $args = append $args (printf "--pprof-addr=%s" .) }}{{ end }}
{{- end }}
{{- if $r.enableCSIIntegration }}
{{- $args = append $args "--enable-csi-integration" }}
{{- end }}
{{- if $r.syncAfterRestart }}
{{- $args = append $args "--sync-after-restart" }}
{{- end }}
{{- if include "nudge.leaderElect" . }}
{{- $le := $r.leaderElection | default dict }}
{{- range $key, $flag := dict "leaseDuration" "lease-duration" "renewDeadline" "renew-deadline" "retryPeriod" "retry-period" }}
{{- with get $le $key }}{{ $args = append $args (printf "--leader-election-%s=%s" $flag .) }}{{ end }}
{{- end }}
{{- end }}
{{- toJson $args }}
{{- end }}

{{/* The container's environment from reloader.deployment.env (open,
secret, existing, field), gomaxprocsOverride and enableMetricsByNamespace,
as Reloader's chart renders them; a list of EnvVar as JSON. */}}
{{- define "nudge.reloaderEnv" -}}
{{- $d := .Values.reloader.deployment | default dict }}
{{- $env := $d.env | default dict }}
{{- $out := list }}
{{- range $name, $value := $env.open | default dict }}
{{- if not (empty $value) }}{{ $out = append $out (dict "name" $name "value" (toString $value)) }}{{ end }}
{{- end }}
{{- $secret := include "nudge.fullname" . }}
{{- range $name, $value := $env.secret | default dict }}
{{- if not (empty $value) }}{{ $out = append $out (dict "name" $name "valueFrom" (dict "secretKeyRef" (dict "name" $secret "key" $name))) }}{{ end }}
{{- end }}
{{- range $secretName, $keys := $env.existing | default dict }}
{{- range $name, $key := $keys | default dict }}
{{- $out = append $out (dict "name" $name "valueFrom" (dict "secretKeyRef" (dict "name" $secretName "key" $key))) }}
{{- end }}
{{- end }}
{{- range $name, $path := $env.field | default dict }}
{{- if not (empty $path) }}{{ $out = append $out (dict "name" $name "valueFrom" (dict "fieldRef" (dict "fieldPath" $path))) }}{{ end }}
{{- end }}
{{- with $d.gomaxprocsOverride }}{{ $out = append $out (dict "name" "GOMAXPROCS" "value" (toString .)) }}{{ end }}
{{- if .Values.reloader.enableMetricsByNamespace }}
{{- $out = append $out (dict "name" "METRICS_COUNT_BY_NAMESPACE" "value" "enabled") }}
{{- end }}
{{- toJson $out }}
{{- end }}

{{/* Image pull Secrets: imagePullSecrets, global.imagePullSecrets and
reloader.deployment.imagePullSecrets; a bare string is a Secret's name. */}}
{{- define "nudge.imagePullSecrets" -}}
{{- $d := .Values.reloader.deployment | default dict }}
{{- $out := list }}
{{- range concat (.Values.imagePullSecrets | default list) ((.Values.global | default dict).imagePullSecrets | default list) ($d.imagePullSecrets | default list) }}
{{- if kindIs "string" . }}{{ $out = append $out (dict "name" .) }}{{ else }}{{ $out = append $out . }}{{ end }}
{{- end }}
{{- toJson $out }}
{{- end }}

{{/* The workload rules Reloader's values add: Secrets Store CSI. */}}
{{- define "nudge.reloaderRules" -}}
{{- if .Values.reloader.enableCSIIntegration }}
# reloader.enableCSIIntegration: rotations of the Secrets Store CSI driver.
- apiGroups: ["secrets-store.csi.x-k8s.io"]
  resources: ["secretproviderclasspodstatuses"]
  verbs: ["list", "watch"]
{{- end }}
{{- end }}

{{/* Reloader's values given that nudge has no use for, each with why, one
a line. */}}
{{- define "nudge.reloaderNoEffect" -}}
{{- $r := .Values.reloader }}
{{- $d := .Values.reloader.deployment | default dict }}
{{- if and (not $r.watchGlobally) (include "nudge.csv" $r.ignoreNamespaces) }}
- reloader.ignoreNamespaces: with watchGlobally=false nudge watches only the release namespace or reloader.namespaces, as Reloader does.
{{- end }}
{{- if (.Values.kubernetes | default dict).host }}
- kubernetes.host: nudge reaches the API server from its ServiceAccount's in-cluster configuration.
{{- end }}
{{- if $r.isOpenshift }}
- reloader.isOpenshift: nudge does not roll OpenShift DeploymentConfigs (deprecated by OpenShift); Deployments are rolled as anywhere.
{{- end }}
{{- if $r.readOnlyRootFileSystem }}
- reloader.readOnlyRootFileSystem: nudge's root filesystem is always read-only, and it needs no /tmp.
{{- end }}
{{- if ($r.legacy | default dict).rbac }}
- reloader.legacy.rbac: nudge's roles use rbac.authorization.k8s.io/v1 only.
{{- end }}
{{- if $r.enableRestartWindows }}
- reloader.enableRestartWindows: no effect; nudge's maintenance windows are the value maintenanceWindow and the annotation nudge.dev/maintenance-window.
{{- end }}
{{- if and ($r.verticalPodAutoscaler | default dict).enabled (not (.Capabilities.APIVersions.Has "autoscaling.k8s.io/v1")) }}
- reloader.verticalPodAutoscaler: the cluster does not serve autoscaling.k8s.io/v1, so no VerticalPodAutoscaler was created (as in Reloader's chart).
{{- end }}
{{- if or (include "nudge.isReloaderImage" (.Values.image.repository | default "")) (include "nudge.isReloaderImage" (.Values.image.name | default "")) }}
- image: Reloader's image was replaced by nudge's, {{ include "nudge.image" . }}.
{{- end }}
{{- end }}

{{/* The values of Reloader's chart nudge's chart knows (values.schema.json's
properties under reloader and kubernetes; test/chart checks the two agree):
a key with {} is a leaf, whatever its value holds. */}}
{{- define "nudge.reloaderKnownValues" }}
kubernetes:
  host: {}
reloader:
  watchGlobally: {}
  namespaces: {}
  ignoreNamespaces: {}
  namespaceSelector: {}
  resourceLabelSelector: {}
  reloadStrategy: {}
  reloadOnCreate: {}
  reloadOnDelete: {}
  ignoreSecrets: {}
  ignoreConfigMaps: {}
  ignoreJobs: {}
  ignoreCronJobs: {}
  autoReloadAll: {}
  enableHA: {}
  logFormat: {}
  logLevel: {}
  webhookUrl: {}
  isArgoRollouts: {}
  syncAfterRestart: {}
  enableCSIIntegration: {}
  enablePProf: {}
  pprofAddr: {}
  enableMetricsByNamespace: {}
  leaderElection:
    id: {}
    leaseDuration: {}
    renewDeadline: {}
    retryPeriod: {}
  custom_annotations:
    auto: {}
    configmap: {}
    secret: {}
    configmap_auto: {}
    secret_auto: {}
    search: {}
    match: {}
    ignore: {}
    pausePeriod: {}
    pauseTime: {}
  matchLabels: {}
  deployment:
    replicas: {}
    revisionHistoryLimit: {}
    nodeSelector: {}
    affinity: {}
    tolerations: {}
    topologySpreadConstraints: {}
    priorityClassName: {}
    runtimeClassName: {}
    schedulerName: {}
    dnsConfig: {}
    automountServiceAccountToken: {}
    hostUsers: {}
    securityContext: {}
    containerSecurityContext: {}
    annotations: {}
    labels: {}
    pod:
      annotations: {}
    image:
      name: {}
      tag: {}
      pullPolicy: {}
    env:
      open: {}
      secret: {}
      existing: {}
      field: {}
    livenessProbe:
      initialDelaySeconds: {}
      periodSeconds: {}
      timeoutSeconds: {}
      successThreshold: {}
      failureThreshold: {}
    readinessProbe:
      initialDelaySeconds: {}
      periodSeconds: {}
      timeoutSeconds: {}
      successThreshold: {}
      failureThreshold: {}
    resources: {}
    imagePullSecrets: {}
    volumes: {}
    volumeMounts: {}
    gomaxprocsOverride: {}
    gomemlimitOverride: {}
  service:
    labels: {}
    annotations: {}
    port: {}
    ipFamilyPolicy: {}
    ipFamilies: {}
  rbac:
    enabled: {}
    labels: {}
  serviceAccount:
    create: {}
    name: {}
    labels: {}
    annotations: {}
    automountServiceAccountToken: {}
  serviceMonitor:
    enabled: {}
    namespace: {}
    interval: {}
    timeout: {}
    scheme: {}
    tlsConfig: {}
    labels: {}
    annotations: {}
    honorLabels: {}
    metricRelabelings: {}
    relabelings: {}
    bearerTokenFile: {}
    targetLabels: {}
  podMonitor:
    enabled: {}
    namespace: {}
    interval: {}
    timeout: {}
    scheme: {}
    tlsConfig: {}
    labels: {}
    annotations: {}
    honorLabels: {}
    metricRelabelings: {}
    relabelings: {}
    bearerTokenSecret: {}
    podTargetLabels: {}
  podDisruptionBudget:
    enabled: {}
    minAvailable: {}
    maxUnavailable: {}
  netpol:
    enabled: {}
    from: {}
    to: {}
  verticalPodAutoscaler:
    enabled: {}
    recommenders: {}
    controlledResources: {}
    controlledValues: {}
    maxAllowed: {}
    minAllowed: {}
    updatePolicy: {}
  isOpenshift: {}
  readOnlyRootFileSystem: {}
  legacy:
    rbac: {}
  enableRestartWindows: {}
{{- end }}

{{/* The values under reloader and kubernetes that nudge's chart does not
know, one "- path" a line: Reloader's chart accepts any key there (a newer
Reloader's values, or a misspelling), and so does nudge's, naming them in
the install notes instead of failing. */}}
{{- define "nudge.reloaderUnknownValues" -}}
{{- $known := fromYaml (include "nudge.reloaderKnownValues" .) }}
{{- include "nudge.unknownValues" (dict "values" (pick .Values "reloader" "kubernetes") "known" $known "path" "") }}
{{- end }}

{{/* The keys of .values (a map) not in .known, with their path under
.path; recursive into the maps .known details. */}}
{{- define "nudge.unknownValues" -}}
{{- $known := .known }}
{{- $prefix := .path }}
{{- range $key := keys .values | sortAlpha }}
{{- $value := get $.values $key }}
{{- $path := printf "%s%s" $prefix $key }}
{{- if not (hasKey $known $key) }}
- {{ $path }}
{{- else if and (kindIs "map" $value) (kindIs "map" (get $known $key)) (not (empty (get $known $key))) }}
{{- include "nudge.unknownValues" (dict "values" $value "known" (get $known $key) "path" (printf "%s." $path)) }}
{{- end }}
{{- end }}
{{- end }}

{{/* The scrape settings of Reloader's serviceMonitor or podMonitor values
shared by both endpoints' kinds, as YAML. */}}
{{- define "nudge.monitorEndpoint" -}}
{{- with .scheme }}
scheme: {{ . }}
{{- end }}
{{- with .tlsConfig }}
tlsConfig:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if not (kindIs "invalid" .honorLabels) }}
honorLabels: {{ .honorLabels }}
{{- end }}
{{- with .metricRelabelings }}
metricRelabelings:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .relabelings }}
relabelings:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
