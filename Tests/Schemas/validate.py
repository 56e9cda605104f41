"""Validate YAML policy files against schemas/policy.schema.json, as an editor's YAML language server would.

usage: validate.py SCHEMA FILE...   prints one line per file: "ok PATH" or "refused PATH: MESSAGE"
Needs PyYAML and jsonschema (`.ci/run` installs both into .venv).
"""
import json
import sys

import jsonschema
import yaml


def main() -> int:
    schema = json.load(open(sys.argv[1], encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for path in sys.argv[2:]:
        try:
            document = yaml.safe_load(open(path, encoding="utf-8"))
        except Exception as error:  # a file YAML itself refuses is not the schema's to judge
            print(f"unreadable {path}: {type(error).__name__}")
            continue
        errors = sorted(validator.iter_errors(document if document is not None else {}), key=lambda e: list(e.path))
        if errors:
            print(f"refused {path}: {errors[0].message[:200]}")
        else:
            print(f"ok {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
