#!/usr/bin/env python3
"""Checks a `heapman leaks --json` answer: it validates against docs/leaks.schema.json (with the
jsonschema package when python3 has it, python3-jsonschema on Debian; else with the small
validator below, which knows the keywords the schema uses), no object repeats a key, and each
suspect's root path shows its holder's size: some step retains the last of the suspect's
retained_at_points (one size definition for the path and the points).

With --dot-dir DIR (the answer's `heapman leaks --dot-dir DIR`), each suspect's picture
DIR/suspect-N.dot draws the objects of its path with the sizes and retained sizes the JSON says
(one size in the JSON and the DOT).

  check_leaks_json.py SCHEMA ANSWER [--dot-dir DIR]    exit 0 when it passes, 1 with the reasons
"""
import json
import os
import re
import sys


def bytes_text(b):
    """The DOT's sizes, as replay/graph's bytesText writes them."""
    if b < 1024:
        return f"{b} B"
    if b < 1 << 20:
        return f"{b / 1024.0:.1f} KiB"
    if b < 1 << 30:
        return f"{b / 1048576.0:.1f} MiB"
    return f"{b / 1073741824.0:.2f} GiB"


def dot_sizes(path):
    """address -> (size, retained) text of the objects a picture draws one by one."""
    with open(path) as f:
        text = f.read()
    out = {}
    for label in re.findall(r'label="((?:[^"\\]|\\.)*)"', text):
        m = re.search(r"\\n(0x[0-9a-f]+), ([^\\]+)(?:\\nretains ([^\\]+))?", label)
        if m:
            out[m.group(1)] = (m.group(2), m.group(3))
    return out


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise ValueError("duplicated keys: " + ", ".join(dup))
    return dict(pairs)


def small_validate(schema, value, root, where, errors):
    """The keywords docs/leaks.schema.json uses: $ref (local), type, const, enum, required,
    properties, additionalProperties: false, items, minimum, pattern."""
    if "$ref" in schema:
        target = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            target = target[part]
        return small_validate(target, value, root, where, errors)
    kinds = schema.get("type")
    if kinds is not None:
        kinds = kinds if isinstance(kinds, list) else [kinds]
        def is_kind(k):
            if k == "integer":
                return isinstance(value, int) and not isinstance(value, bool)
            if k == "number":
                return isinstance(value, (int, float)) and not isinstance(value, bool)
            return {"string": str, "boolean": bool, "array": list, "object": dict,
                    "null": type(None)}[k] == type(value)
        if not any(is_kind(k) for k in kinds):
            errors.append(f"{where}: {value!r} is not of type {kinds}")
            return
    if "const" in schema and value != schema["const"]:
        errors.append(f"{where}: {value!r} is not {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if "minimum" in schema and isinstance(value, (int, float)) and not isinstance(value, bool) \
            and value < schema["minimum"]:
        errors.append(f"{where}: {value} is less than {schema['minimum']}")
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        errors.append(f"{where}: {value!r} does not match {schema['pattern']}")
    if isinstance(value, dict):
        for k in schema.get("required", []):
            if k not in value:
                errors.append(f"{where}: '{k}' is a required property")
        props = schema.get("properties", {})
        for k, v in value.items():
            if k in props:
                small_validate(props[k], v, root, f"{where}.{k}", errors)
            elif schema.get("additionalProperties") is False:
                errors.append(f"{where}: additional property '{k}'")
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            small_validate(schema["items"], v, root, f"{where}[{i}]", errors)


def main():
    schema_path, answer_path = sys.argv[1:3]
    dot_dir = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--dot-dir" else None
    with open(schema_path) as f:
        schema = json.load(f)
    errors = []
    try:
        with open(answer_path) as f:
            answer = json.load(f, object_pairs_hook=no_duplicates)
    except ValueError as e:
        print(f"{answer_path}: {e}")
        return 1
    try:
        import jsonschema
        validator = jsonschema.validators.validator_for(schema)(schema)
        errors += [f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
                   for e in validator.iter_errors(answer)]
        how = "jsonschema"
    except ImportError:
        small_validate(schema, answer, schema, "$", errors)
        how = "the small validator"
    for s in answer.get("suspects", []):
        steps = [p for p in answer.get("paths", []) if p.get("suspect") == s.get("rank")]
        last = (s.get("retained_at_points") or [None])[-1]
        if s.get("holder_kind") in ("static", "object") and steps and \
                last not in [p.get("retained") for p in steps]:
            errors.append(f"suspect {s.get('rank')}: no step of its path retains {last} bytes, the "
                          f"last of its retained_at_points: {[p.get('retained') for p in steps]}")
    for s in answer.get("suspects", []) if dot_dir else []:
        dot = os.path.join(dot_dir, f"suspect-{s.get('rank')}.dot")
        if not os.path.exists(dot):
            errors.append(f"{dot}: missing")
            continue
        drawn = dot_sizes(dot)
        for p in answer.get("paths", []):
            if p.get("suspect") != s.get("rank") or p.get("node") not in drawn:
                continue
            want = (bytes_text(p["size"]), bytes_text(p["retained"]) if p["retained"] else None)
            if drawn[p["node"]] != want:
                errors.append(f"{dot}: {p['node']} drawn with size, retained {drawn[p['node']]}, "
                              f"the JSON's path says {want}")
    for e in errors:
        print(e)
    print(f"{answer_path}: {len(errors)} problems ({how})")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
