{{/*
Names and labels shared by every template, so a resource's name and selector never drift apart.
*/}}

{{/* The chart name, overridable. */}}
{{- define "llmscaler.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified name: <release>-<chart> unless the release name already contains the chart name. */}}
{{- define "llmscaler.fullname" -}}
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

{{/* chart-version label value. */}}
{{- define "llmscaler.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every resource. */}}
{{- define "llmscaler.labels" -}}
helm.sh/chart: {{ include "llmscaler.chart" . }}
{{ include "llmscaler.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: llmscaler
{{- end }}

{{/* The immutable subset used by selectors; never add a label that can change on upgrade. */}}
{{- define "llmscaler.selectorLabels" -}}
app.kubernetes.io/name: {{ include "llmscaler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
control-plane: controller-manager
{{- end }}

{{/* The manager's service account name. */}}
{{- define "llmscaler.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "llmscaler.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The manager image; an empty tag follows the chart's appVersion (what the release publishes). */}}
{{- define "llmscaler.image" -}}
{{- printf "%s:%s" .Values.manager.image.repository (default .Chart.AppVersion .Values.manager.image.tag) }}
{{- end }}
