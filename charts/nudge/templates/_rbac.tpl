{{/*
The workload rules: read sources and workloads, roll workloads, record
Events. Nothing writes a ConfigMap or a Secret, nothing touches Pods but
with eviction.enabled (a list, an eviction). Every
read is a list and watch of an informer: nudge never gets one object, but a
bound Secret or ConfigMap when it applies a value binding.
*/}}
{{- define "nudge.workloadRules" -}}
{{- $r := .Values.reloader -}}
{{- /* Value bindings watch both kinds of source, whatever the workloads do. */}}
{{- $vb := .Values.valueBindings.enabled -}}
{{- if or (not $r.ignoreConfigMaps) $vb }}
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["list", "watch"]
{{- end }}
{{- if or (not $r.ignoreSecrets) $vb }}
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["list", "watch"]
{{- end }}
- apiGroups: ["apps"]
  resources: ["deployments", "statefulsets", "daemonsets"]
  verbs: ["list", "watch", "patch"]
{{- if not $r.ignoreCronJobs }}
- apiGroups: ["batch"]
  resources: ["cronjobs"]
  verbs: ["list", "watch", "patch"]
{{- end }}
{{- if include "nudge.jobs" . }}
# --recreate-jobs: a Job carries nudge's state (patch) and, when its sources
# changed, is read whole (get), checked by a dry-run create, deleted and
# created again.
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["get", "list", "watch", "patch", "create", "delete"]
{{- else if include "nudge.cronJobStartJob" . }}
# --cronjob-start-job: a Job is started from a CronJob whose sources changed.
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["create"]
{{- end }}
{{- if include "nudge.cronJobStartJob" . }}
# That Job is owned by its CronJob with blockOwnerDeletion, which clusters
# with the OwnerReferencesPermissionEnforcement admission plugin (OpenShift)
# allow only to whoever may update the CronJob's finalizers.
- apiGroups: ["batch"]
  resources: ["cronjobs/finalizers"]
  verbs: ["update"]
{{- end }}
{{- if include "nudge.rollouts" . }}
# Argo Rollouts, granted whether or not it is installed yet: nudge finds out
# from API discovery, which needs no rule, and starts on them when it is.
- apiGroups: ["argoproj.io"]
  resources: ["rollouts"]
  verbs: ["list", "watch", "patch"]
{{- end }}
{{- if and (not $r.ignoreSecrets) (ne (toString .Values.producerReadyTimeout) "0") (ne (toString .Values.producerReadyTimeout) "0s") }}
# The producer-ready gate (producerReadyTimeout): the producers of Secrets,
# their status read from a watch, granted whether or not they are installed.
- apiGroups: ["external-secrets.io"]
  resources: ["externalsecrets"]
  verbs: ["list", "watch"]
- apiGroups: ["cert-manager.io"]
  resources: ["certificates"]
  verbs: ["list", "watch"]
{{- end }}
{{- if .Values.valueBindings.enabled }}
# Value bindings: read the bindings, patch their finalizer (deletionPolicy
# Delete) and their status; get a Secret or ConfigMap a binding reads, once
# per apply (its value is never cached); read and patch (server-side apply of
# the bound fields alone) the kinds listed in valueBindings.targets, and no
# other.
- apiGroups: ["nudge.dev"]
  resources: ["valuebindings"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["nudge.dev"]
  resources: ["valuebindings/status"]
  verbs: ["patch"]
- apiGroups: [""]
  resources: ["secrets", "configmaps"]
  verbs: ["get"]
{{- range .Values.valueBindings.targets }}
- apiGroups: [{{ .apiGroup | quote }}]
  resources: [{{ .resource | quote }}]
  verbs: ["get", "list", "watch", "patch"]
{{- end }}
{{- end }}
{{- if .Values.eviction.enabled }}
# eviction.enabled: a restart reads the pods of the workload it restarts (a
# LIST of its selector, never a watch) and its owner (get), and evicts them
# through the Eviction API, which keeps their PodDisruptionBudget; nudge
# never deletes a pod.
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["list"]
- apiGroups: [""]
  resources: ["pods/eviction"]
  verbs: ["create"]
- apiGroups: ["apps"]
  resources: ["statefulsets", "daemonsets"]
  verbs: ["get"]
{{- end }}
{{- include "nudge.reloaderRules" . }}
{{- range .Values.customKinds }}
# Custom kind {{ .apiVersion }} {{ .kind }}, granted whether or not its CRD is
# installed yet (found by API discovery); get for the env-vars strategy.
- apiGroups: [{{ ternary (first (splitList "/" .apiVersion)) "" (contains "/" .apiVersion) | quote }}]
  resources: [{{ .resource | quote }}]
  verbs: ["get", "list", "watch", "patch"]
{{- end }}
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end }}
