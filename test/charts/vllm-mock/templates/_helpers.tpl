{{/* The release name is the app name, so `helm install vllm-opt-125m` gives app=vllm-opt-125m. */}}
{{- define "vllm-mock.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "vllm-mock.selectorLabels" -}}
app: {{ include "vllm-mock.fullname" . }}
{{- end }}

{{- define "vllm-mock.labels" -}}
{{ include "vllm-mock.selectorLabels" . }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
The drain budget: every step of the shutdown must fit terminationGracePeriodSeconds, or the
kubelet's SIGKILL can land in any of them and kill running requests.
*/}}
{{- define "vllm-mock.checkDrainBudget" -}}
{{- $total := add .Values.endpointSyncSeconds .Values.drainSeconds .Values.shutdownTimeout }}
{{- if gt (int $total) (int .Values.terminationGracePeriodSeconds) }}
{{- fail (printf "endpointSyncSeconds (%v) + drainSeconds (%v) + shutdownTimeout (%v) = %v exceeds terminationGracePeriodSeconds (%v); raise the grace period or shorten a step" .Values.endpointSyncSeconds .Values.drainSeconds .Values.shutdownTimeout $total .Values.terminationGracePeriodSeconds) }}
{{- end }}
{{- end }}
