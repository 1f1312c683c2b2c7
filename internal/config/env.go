package config

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// envKey is one setting that an environment variable can override.
type envKey struct {
	path string // key path in the file, e.g. "limits.max_attempts"
	v    reflect.Value
}

// envName returns the environment variable that overrides the key at path:
// "CADRE_" followed by the path upper-cased with "." and "-" as "_", so
// "limits.max_attempts" is CADRE_LIMITS_MAX_ATTEMPTS.
func envName(path string) string {
	return "CADRE_" + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(path))
}

// envKeys lists every scalar or list setting outside the roles and runners
// maps, in file order, bound to its place in cfg.
func envKeys(cfg *Config) []envKey {
	return structKeys(reflect.ValueOf(cfg).Elem(), "", true)
}

// structKeys lists the keys of struct v under prefix, nested structs'
// keys by their full path (follow.ci_failed.rounds); top says v is the
// whole Config, whose maps have named entries and no fixed variables.
func structKeys(v reflect.Value, prefix string, top bool) []envKey {
	var keys []envKey
	for _, f := range fieldsOf(v.Type()) {
		fv := v.Field(f.index)
		switch {
		case fv.Kind() == reflect.Map && top:
			// Named entries have no fixed variable names.
		case fv.Kind() == reflect.Struct && fv.Type() != durationType:
			keys = append(keys, structKeys(fv, prefix+f.name+".", false)...)
		default:
			keys = append(keys, envKey{path: prefix + f.name, v: fv})
		}
	}
	return keys
}

// applyEnv overrides settings from the environment. An empty variable
// counts as unset.
func (l *loader) applyEnv(cfg *Config, getenv func(string) string) error {
	for _, k := range envKeys(cfg) {
		name := envName(k.path)
		s := getenv(name)
		if s == "" {
			continue
		}
		if err := setText(k.v, strings.TrimSpace(s)); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		l.fromEnv[k.path] = name
	}
	return nil
}

// setText stores s, written as in an environment variable, into v. Lists
// are comma-separated.
func setText(v reflect.Value, s string) error {
	if v.Type() == durationType {
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%s, got %q", wantDuration, s)
		}
		v.SetInt(int64(d))
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		// An optional setting (unset means "decided per case"): the
		// variable sets it.
		p := reflect.New(v.Type().Elem())
		if err := setText(p.Elem(), s); err != nil {
			return err
		}
		v.Set(p)
	case reflect.String:
		v.SetString(s)
	case reflect.Int:
		i, err := strconv.ParseInt(s, 10, 0)
		if err != nil {
			return fmt.Errorf("%s, got %q", wantInt, s)
		}
		v.SetInt(i)
	case reflect.Float64:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%s, got %q", wantNumber, s)
		}
		v.SetFloat(f)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("%s, got %q", wantBool, s)
		}
		v.SetBool(b)
	case reflect.Slice:
		var items []string
		for item := range strings.SplitSeq(s, ",") {
			if item = strings.TrimSpace(item); item != "" {
				items = append(items, item)
			}
		}
		v.Set(reflect.ValueOf(items))
	default:
		return fmt.Errorf("cannot be set from the environment")
	}
	return nil
}
