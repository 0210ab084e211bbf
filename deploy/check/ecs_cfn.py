#!/usr/bin/env python3
"""Wrap deploy/ecs/task-definition.json (the ECS API form that `aws ecs register-task-definition
--cli-input-json` takes) into a CloudFormation template with one AWS::ECS::TaskDefinition, so
cfn-lint can check it against the resource schema (enums, Fargate cpu/memory pairs, typos).

ECS API keys are camelCase, CloudFormation's are PascalCase; map keys under `options` and
`dockerLabels` are the user's and stay as they are. Usage: ecs_cfn.py in.json out.json
"""
import json
import sys

KEEP_KEYS = {"options", "dockerLabels"}  # free-form maps: their keys are values


def pascal(node, keep=False):
    if isinstance(node, list):
        return [pascal(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for k, v in node.items():
        nk = k if keep else k[:1].upper() + k[1:]
        out[nk] = v if keep else pascal(v, keep=k in KEEP_KEYS)
    return out


def main(src, dst):
    td = json.load(open(src))
    props = pascal(td)
    tmpl = {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": "smg task definition (generated from " + src + " for cfn-lint)",
        "Resources": {"SmgTaskDefinition": {"Type": "AWS::ECS::TaskDefinition", "Properties": props}},
    }
    json.dump(tmpl, open(dst, "w"), indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
