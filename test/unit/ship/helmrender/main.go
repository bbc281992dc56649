// helmrender renders a Helm chart the way `helm template` does, for machines without helm.
//
// It uses the same engine Helm does, Go's text/template with the sprig function library, plus
// Helm's own additions (include, tpl, required, toYaml, fromYaml, .Files.Get), Helm's values
// typing (numbers from values.yaml are float64, --set integers are int64) and Helm's
// "<no value>" scrubbing. It is a test tool: no subcharts, no hooks, no lookup.
//
// Usage: helmrender CHART_DIR [--name N] [--namespace NS] [--set a.b=v]...
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig"
	"gopkg.in/yaml.v3"
)

// Files gives templates read access to the chart's files, like Helm's .Files.
type Files map[string][]byte

// Get returns a chart file's content, or "" when it does not exist (as Helm does).
func (f Files) Get(name string) string { return string(f[filepath.ToSlash(name)]) }

func toYAML(v interface{}) string {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// jsonTyped converts YAML-decoded data to what Helm sees: JSON types, numbers as float64.
func jsonTyped(v interface{}) (interface{}, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out interface{}
	err = json.Unmarshal(raw, &out)
	return out, err
}

func parseSetValue(s string) interface{} {
	switch s {
	case "true":
		return true
	case "false":
		return false
	case "null":
		return nil
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i
	}
	return s
}

func applySet(values map[string]interface{}, expr string) error {
	for _, item := range strings.Split(expr, ",") {
		key, value, ok := strings.Cut(item, "=")
		if !ok {
			return fmt.Errorf("--set %q: expected key=value", item)
		}
		parts := strings.Split(key, ".")
		node := values
		for _, p := range parts[:len(parts)-1] {
			next, ok := node[p].(map[string]interface{})
			if !ok {
				next = map[string]interface{}{}
				node[p] = next
			}
			node = next
		}
		node[parts[len(parts)-1]] = parseSetValue(value)
	}
	return nil
}

func run() error {
	if len(os.Args) < 2 {
		return fmt.Errorf("usage: helmrender CHART_DIR [--name N] [--namespace NS] [--set k=v]...")
	}
	chartDir := os.Args[1]
	name, namespace := "release-name", "default"
	var sets []string
	for i := 2; i < len(os.Args); i++ {
		if i+1 >= len(os.Args) {
			return fmt.Errorf("flag %s needs a value", os.Args[i])
		}
		switch os.Args[i] {
		case "--name":
			name = os.Args[i+1]
		case "--namespace":
			namespace = os.Args[i+1]
		case "--set":
			sets = append(sets, os.Args[i+1])
		default:
			return fmt.Errorf("unknown flag %s", os.Args[i])
		}
		i++
	}

	chartRaw, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		return err
	}
	var chart map[string]interface{}
	if err := yaml.Unmarshal(chartRaw, &chart); err != nil {
		return fmt.Errorf("Chart.yaml: %w", err)
	}
	valuesRaw, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		return err
	}
	var decoded map[string]interface{}
	if err := yaml.Unmarshal(valuesRaw, &decoded); err != nil {
		return fmt.Errorf("values.yaml: %w", err)
	}
	typed, err := jsonTyped(decoded)
	if err != nil {
		return err
	}
	values, _ := typed.(map[string]interface{})
	if values == nil {
		values = map[string]interface{}{}
	}
	for _, s := range sets {
		if err := applySet(values, s); err != nil {
			return err
		}
	}

	files := Files{}
	var templates []string
	err = filepath.Walk(chartDir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(chartDir, path)
		rel = filepath.ToSlash(rel)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasPrefix(rel, "templates/") {
			templates = append(templates, rel)
		} else {
			files[rel] = data
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(templates)

	chartName, _ := chart["name"].(string)
	root := template.New("chart").Option("missingkey=zero")
	funcs := sprig.TxtFuncMap()
	funcs["toYaml"] = toYAML
	funcs["fromYaml"] = func(s string) map[string]interface{} {
		out := map[string]interface{}{}
		_ = yaml.Unmarshal([]byte(s), &out)
		return out
	}
	funcs["include"] = func(name string, data interface{}) (string, error) {
		var buf bytes.Buffer
		err := root.ExecuteTemplate(&buf, name, data)
		return buf.String(), err
	}
	funcs["tpl"] = func(text string, data interface{}) (string, error) {
		t, err := root.Clone()
		if err != nil {
			return "", err
		}
		t, err = t.New("tpl").Parse(text)
		if err != nil {
			return "", err
		}
		var buf bytes.Buffer
		err = t.Execute(&buf, data)
		return buf.String(), err
	}
	funcs["required"] = func(msg string, v interface{}) (interface{}, error) {
		if v == nil || v == "" {
			return nil, fmt.Errorf("%s", msg)
		}
		return v, nil
	}
	root.Funcs(funcs)
	for _, rel := range templates {
		data, err := os.ReadFile(filepath.Join(chartDir, rel))
		if err != nil {
			return err
		}
		if _, err := root.New(chartName + "/" + rel).Parse(string(data)); err != nil {
			return err
		}
	}

	top := map[string]interface{}{
		"Values": values,
		"Release": map[string]interface{}{
			"Name": name, "Namespace": namespace, "Service": "Helm",
			"IsInstall": true, "IsUpgrade": false, "Revision": 1,
		},
		"Chart": map[string]interface{}{
			"Name": chart["name"], "Version": chart["version"], "AppVersion": chart["appVersion"],
		},
		"Files":        files,
		"Capabilities": map[string]interface{}{"KubeVersion": map[string]interface{}{"Version": "v1.30.0"}},
	}
	var out strings.Builder
	for _, rel := range templates {
		base := filepath.Base(rel)
		if strings.HasPrefix(base, "_") || base == "NOTES.txt" {
			continue
		}
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, chartName+"/"+rel, top); err != nil {
			return err
		}
		text := strings.ReplaceAll(buf.String(), "<no value>", "")
		if strings.TrimSpace(text) == "" {
			continue
		}
		fmt.Fprintf(&out, "---\n# Source: %s/%s\n%s\n", chartName, rel, strings.TrimSpace(text))
	}
	fmt.Print(out.String())
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		os.Exit(1)
	}
}
