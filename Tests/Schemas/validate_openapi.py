"""Validate docs/openapi.yaml as an OpenAPI 3.1 document (openapi-spec-validator, which .ci/run installs in .venv).

usage: validate_openapi.py SPEC   prints "ok" or the first error, exit 0 or 1
"""
import sys

import yaml
from openapi_spec_validator import validate


def main() -> int:
    spec = yaml.safe_load(open(sys.argv[1], encoding="utf-8"))
    try:
        validate(spec)
    except Exception as error:  # the validator's own error types vary by version
        print(f"invalid: {str(error)[:2000]}")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
