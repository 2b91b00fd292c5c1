package binding

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
)

// redacted stands for a value taken out of a message.
const redacted = "[redacted]"

// echoes returns the forms in which a message may repeat a bound value:
// raw, as the Secret or ConfigMap holds it, and value, raw converted
// (Convert). A message is the API server's answer to an apply, or a
// webhook's denial it relays, and either may quote the value it refused, as
// written or as it decoded it:
//   - raw as written, and without the spaces around it (a value read from a
//     file often ends in a newline that a validation trims);
//   - raw quoted as Go quotes it (%q, strconv.Quote, QuoteToASCII) and as
//     JSON encodes it (HTML characters escaped or not), with and without
//     the quotes;
//   - raw as decoded from JSON, each byte that is not UTF-8 read as U+FFFD;
//   - raw in base64, as a []byte is encoded in JSON;
//   - an integer in base 10, and as a float64 prints (a webhook that
//     decodes JSON into any holds a float64: %v prints 1e+18, a JavaScript
//     one prints the rounded digits);
//   - a boolean as "true" or "false".
//
// Forms are returned once each, empty ones left out.
func echoes(raw []byte, value any) []string {
	s := string(raw)
	forms := []string{s, strings.TrimSpace(s), base64.StdEncoding.EncodeToString(raw)}
	for _, q := range []string{strconv.Quote(s), strconv.QuoteToASCII(s), jsonString(s, true), jsonString(s, false)} {
		forms = append(forms, q, strings.TrimSuffix(strings.TrimPrefix(q, `"`), `"`))
	}
	// Decoded from JSON, as the API server and a webhook read the apply:
	// each byte that is not UTF-8 became U+FFFD.
	var decoded string
	_ = json.Unmarshal([]byte(jsonString(s, false)), &decoded) // a JSON string always decodes
	forms = append(forms, decoded, strings.TrimSpace(decoded), strings.ToValidUTF8(s, "\uFFFD"))
	switch v := value.(type) {
	case int64:
		f := float64(v)
		forms = append(forms, strconv.FormatInt(v, 10), strconv.FormatFloat(f, 'g', -1, 64),
			strconv.FormatFloat(f, 'e', -1, 64), strconv.FormatFloat(f, 'f', -1, 64))
	case bool:
		forms = append(forms, strconv.FormatBool(v))
	}
	out := forms[:0]
	seen := map[string]bool{"": true}
	for _, f := range forms {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}

// jsonString returns s as encoding/json writes a string, with HTML
// characters (<, >, &) escaped or not.
func jsonString(s string, escapeHTML bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// redact returns msg with every occurrence of each of forms replaced by
// "[redacted]". Occurrences are found in msg as given, overlapping ones
// included, and each run of bytes they cover becomes one "[redacted]": so
// no text between two placeholders holds a form, and a placeholder never
// joins its neighbours into a new occurrence.
func redact(msg string, forms []string) string {
	covered := make([]bool, len(msg))
	found := false
	for _, f := range forms {
		if f == "" {
			continue
		}
		for at := 0; ; {
			i := strings.Index(msg[at:], f)
			if i < 0 {
				break
			}
			for j := at + i; j < at+i+len(f); j++ {
				covered[j] = true
			}
			found = true
			at += i + 1
		}
	}
	if !found {
		return msg
	}
	var b strings.Builder
	for i := 0; i < len(msg); i++ {
		if !covered[i] {
			b.WriteByte(msg[i])
			continue
		}
		b.WriteString(redacted)
		for i+1 < len(msg) && covered[i+1] {
			i++
		}
	}
	return b.String()
}
