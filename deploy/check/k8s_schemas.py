#!/usr/bin/env python3
"""Turn Kubernetes' swagger.json (it ships in the k8s.io/kubernetes module zip under
api/openapi-spec/) into kubeconform's schema layout, offline:
<out>/v<ver>-standalone[-strict]/<kind>[-<group>]-<version>.json.

Quantity becomes string-or-number and int-or-string fields string-or-integer (as the API
server accepts them); optional scalar fields also accept null (helm renders empty values so).
The strict set forbids unknown fields. Usage: k8s_schemas.py swagger.json out-dir 1.37.2
"""
import json
import os
import sys


def convert(defs, node, stack, strict):
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.split("/")[-1]
        if name == "io.k8s.apimachinery.pkg.api.resource.Quantity":
            return {"oneOf": [{"type": "string"}, {"type": "number"}]}
        if name in stack:  # recursive JSONSchemaProps
            return {}
        return convert(defs, defs[name], stack | {name}, strict)
    if node.get("format") == "int-or-string":
        return {"oneOf": [{"type": "string"}, {"type": "integer"}]}
    new = dict(node)
    if isinstance(node.get("properties"), dict):
        req = set(node.get("required", []))
        props = {}
        for k, v in node["properties"].items():
            v = convert(defs, v, stack, strict)
            if isinstance(v.get("type"), str) and k not in req:
                v = dict(v, type=[v["type"], "null"])
            props[k] = v
        new["properties"] = props
        if strict and "additionalProperties" not in node:
            new["additionalProperties"] = False
    if isinstance(node.get("items"), dict):
        new["items"] = convert(defs, node["items"], stack, strict)
    if isinstance(node.get("additionalProperties"), dict):
        new["additionalProperties"] = convert(defs, node["additionalProperties"], stack, strict)
    for k in ("allOf", "oneOf", "anyOf"):
        if isinstance(node.get(k), list):
            new[k] = [convert(defs, x, stack, strict) for x in node[k]]
    return new


def main(src, out, ver):
    defs = json.load(open(src))["definitions"]
    for strict in (False, True):
        d = os.path.join(out, "v%s-standalone%s" % (ver, "-strict" if strict else ""))
        os.makedirs(d, exist_ok=True)
        for name, sch in defs.items():
            for gvk in sch.get("x-kubernetes-group-version-kind", []):
                g, v, k = gvk["group"], gvk["version"], gvk["kind"]
                fn = (k + ("-" + g.split(".")[0] if g else "") + "-" + v + ".json").lower()
                s = convert(defs, sch, {name}, strict)
                s["$schema"] = "http://json-schema.org/schema#"
                with open(os.path.join(d, fn), "w") as f:
                    json.dump(s, f)


if __name__ == "__main__":
    main(*sys.argv[1:4])
