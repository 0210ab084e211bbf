//go:build go1.27

package text

import (
	"bytes"
	"encoding/json/jsontext"
	"fmt"
	"io"
	"strconv"

	"github.com/ardanlabs/jinja"
)

// jsonToValue decodes one JSON document into template values, keeping object key order (the
// engine's Go-map conversion sorts keys, and `tools | tojson` must print them as the client
// sent them, like Python's dicts). Integers stay integers; other numbers become floats.
//
// The document is parsed in place (jsontext over a bytes.Buffer; encoding/json's Decoder
// copies its input into a buffer that doubles as it fills): a 15 MB data URL in a message
// costs its one string, not four times more. Duplicate keys (the last wins) and invalid
// UTF-8 are accepted, as encoding/json does. jsonvalue_go126.go is the same for older
// toolchains.
func jsonToValue(data []byte) (jinja.Value, error) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(data), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	v, err := decodeValue(dec)
	if err != nil {
		return jinja.Undefined(), err
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return jinja.Undefined(), fmt.Errorf("text: trailing data after JSON value")
	}
	return v, nil
}

func decodeValue(dec *jsontext.Decoder) (jinja.Value, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return jinja.Undefined(), err
	}
	switch tok.Kind() {
	case '{':
		d := jinja.NewDict()
		for dec.PeekKind() != '}' {
			kt, err := dec.ReadToken()
			if err != nil {
				return jinja.Undefined(), err
			}
			key := kt.String() // before the next read voids the token
			v, err := decodeValue(dec)
			if err != nil {
				return jinja.Undefined(), err
			}
			d.AsDict().Set(key, v)
		}
		_, err := dec.ReadToken()
		return d, err
	case '[':
		var items []jinja.Value
		for dec.PeekKind() != ']' {
			v, err := decodeValue(dec)
			if err != nil {
				return jinja.Undefined(), err
			}
			items = append(items, v)
		}
		_, err := dec.ReadToken()
		return jinja.NewList(items), err
	case '"':
		return jinja.NewString(tok.String()), nil
	case 't', 'f':
		return jinja.NewBool(tok.Bool()), nil
	case 'n':
		return jinja.None(), nil
	case '0':
		lit := tok.String() // a number's literal
		if i, err := strconv.ParseInt(lit, 10, 64); err == nil {
			return jinja.NewInt(i), nil
		}
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil {
			return jinja.Undefined(), err
		}
		return jinja.NewFloat(f), nil
	}
	return jinja.Undefined(), fmt.Errorf("text: unexpected JSON token %v", tok)
}
