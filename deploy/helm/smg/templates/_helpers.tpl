{{/* Chart name, truncated to the 63 characters a label value allows. */}}
{{- define "smg.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name: release-chart unless the release name already holds it. */}}
{{- define "smg.fullname" -}}
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

{{- define "smg.selectorLabels" -}}
app.kubernetes.io/name: {{ include "smg.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "smg.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "smg.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "smg.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "smg.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Name of the Secret holding the admin API key, or "" when none is configured. */}}
{{- define "smg.adminSecretName" -}}
{{- if .Values.adminApiKey.existingSecret }}
{{- .Values.adminApiKey.existingSecret }}
{{- else if .Values.adminApiKey.value }}
{{- printf "%s-admin" (include "smg.fullname" .) }}
{{- end }}
{{- end }}

{{/* Name of the Secret holding the data-plane API key, or "" when none is configured. */}}
{{- define "smg.apiKeySecretName" -}}
{{- if .Values.apiKey.existingSecret }}
{{- .Values.apiKey.existingSecret }}
{{- else if .Values.apiKey.value }}
{{- printf "%s-api-key" (include "smg.fullname" .) }}
{{- end }}
{{- end }}

{{/*
Pod termination deadline: preStop sleep + drain delay + grace period + 5 s to write the cut
answers (README "Shutdown"), so the kubelet's SIGKILL comes after the gateway's own deadline.
*/}}
{{- define "smg.terminationGracePeriodSeconds" -}}
{{- add .Values.shutdown.preStopSleepSeconds .Values.shutdown.drainDelaySeconds .Values.shutdown.gracePeriodSeconds 5 }}
{{- end }}

{{/* The container's environment: Redis URL and admin key (from Secrets when set), extraEnv. */}}
{{- define "smg.env" -}}
{{- if .Values.redis.existingSecret }}
- name: SMG_REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.redis.existingSecret }}
      key: {{ .Values.redis.existingSecretKey }}
{{- else if .Values.redis.url }}
- name: SMG_REDIS_URL
  value: {{ .Values.redis.url | quote }}
{{- end }}
{{- if .Values.redis.cluster }}
- name: SMG_REDIS_CLUSTER
  value: "true"
{{- end }}
{{- with (include "smg.adminSecretName" .) }}
- name: SMG_ADMIN_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.adminApiKey.existingSecretKey }}
{{- end }}
{{- with (include "smg.apiKeySecretName" .) }}
- name: SMG_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.apiKey.existingSecretKey }}
{{- end }}
{{- with .Values.gateway.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The namespace discovery watches and its Role lives in: discovery.namespace, else the release's. */}}
{{- define "smg.discoveryNamespace" -}}
{{- .Values.discovery.namespace | default .Release.Namespace }}
{{- end }}

{{/* Name of the ConfigMap mounted as --workers-file: workersFile.existingConfigMap, else the chart's. */}}
{{- define "smg.workersConfigMapName" -}}
{{- .Values.workersFile.existingConfigMap | default (printf "%s-workers" (include "smg.fullname" .)) }}
{{- end }}
