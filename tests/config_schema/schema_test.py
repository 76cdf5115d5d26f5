#!/usr/bin/env python3
"""config/gateway.schema.json kept true to the loader, in both directions.

  shipped      Every gateway configuration in the repository validates against the schema and loads.
  invalid      Each of a set of broken configurations is refused by the schema and by `gateway --check`.
  every-key    tests/config_schema/every_key.yaml passes `gateway --check` and the schema, and sets every
               key path the schema declares: each key the schema knows, the loader accepts.
  loader-keys  Every key the loader's section readers know (config_known_keys, which records the keys each
               reader asks for while every_key.yaml loads) is declared by the schema at the same path.

Why the drift check works this way: the loader has no list of its keys to read; each section reader asks
for the keys it knows, and yaml_reader::finish() reports any other as unknown. So the loader's side is taken
from the readers themselves, by recording what they ask for (a new key in a reader shows up without anyone
writing it down), on a file that reaches every reader and every branch (http, sqlite and postgres
downstreams, aggregate and pass-through routes). That file is kept complete by `every-key`: it must set
every path the schema declares and pass both the schema and `--check` (no unknown key). A new section is
caught too: its parent reader asks for its name.

Paths are written like `downstreams.*.retry.attempts` (`*`: any name of a name-keyed mapping) and
`routes[].calls[].name` (`[]`: any item of a list).

usage: schema_test.py --source DIR --gateway BIN --known-keys BIN shipped|invalid|every-key|loader-keys
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import jsonschema

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import yaml12  # noqa: E402

# Where gateway configurations are looked for; a YAML file there is one when its top level is a mapping
# with `routes` or `downstreams` (the Kubernetes manifests under deploy/ are not).
CONFIG_DIRS = ["config", "deploy", "loadtest", "tests"]

# Configurations that are broken on purpose: seeds of the config loader's fuzz target, which holds
# errors and text that is not UTF-8 to start its mutations from. The rule: a file is skipped only when it
# is listed here, and a listed file must still be refused by the loader (so the list cannot go stale).
DELIBERATELY_INVALID = {
    "tests/fuzz/corpus/config_loader/anchors.yaml",
    "tests/fuzz/corpus/config_loader/errors.yaml",
    "tests/fuzz/corpus/config_loader/fallback-not-utf8.yaml",
    "tests/fuzz/corpus/config_loader/route-path-not-utf8.yaml",
    "tests/fuzz/corpus/config_loader/sql-postgres.yaml",
}

# The environment the shipped configurations take values from (deploy/overlays/postgres: DB_PASSWORD;
# deploy/overlays/edge: REDIS_PASSWORD;
# deploy/examples/own-config: its gateway.env).
SHIPPED_ENVIRONMENT = {"DB_PASSWORD": "secret", "USER": "gateway", "CATALOG_API_KEY": "replace-me",
                       "REDIS_PASSWORD": "secret"}

failures = []


def fail(message):
    failures.append(message)
    print("FAIL: " + message)


def validator(source):
    with open(os.path.join(source, "config", "gateway.schema.json")) as f:
        schema = json.load(f)
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def schema_errors(v, document):
    return ["%s: %s" % ("/".join(str(p) for p in e.absolute_path) or "(top)", e.message[:300])
            for e in v.iter_errors(document)]


# ---- Key paths


def resolve(v, schema):
    while "$ref" in schema:
        schema = v.resolver.resolve(schema["$ref"])[1]
    return schema


def branches(schema):
    """The subschemas that may apply where `schema` does (if/then/else and the combinators)."""
    out = [schema]
    for key in ("then", "else"):
        if key in schema:
            out.append(schema[key])
    for key in ("allOf", "anyOf", "oneOf"):
        out.extend(schema.get(key, []))
    return out


def declared_paths(v, schema, prefix="", seen=None):
    """Every key path the schema declares, over all branches."""
    seen = set() if seen is None else seen
    paths = set()
    schema = resolve(v, schema)
    if id(schema) in seen:
        return paths
    seen = seen | {id(schema)}
    for s in branches(schema):
        s = resolve(v, s)
        if s is not schema:
            paths |= declared_paths(v, s, prefix, seen)
            continue
        for name, sub in s.get("properties", {}).items():
            path = prefix + ("." if prefix else "") + name
            paths.add(path)
            paths |= declared_paths(v, sub, path, seen)
        if isinstance(s.get("additionalProperties"), dict) and "properties" not in s:
            paths |= declared_paths(v, s["additionalProperties"], prefix + ".*", seen)
        if isinstance(s.get("items"), dict):
            paths |= declared_paths(v, s["items"], prefix + "[]", seen)
    return paths


def applying(v, schema, value):
    """The subschemas that apply to `value`: an if/then/else resolved on the value itself."""
    schema = resolve(v, schema)
    out = [schema]
    if "if" in schema:
        chosen = schema.get("then") if v.evolve(schema=schema["if"]).is_valid(value) else schema.get("else")
        if chosen is not None:
            out.extend(applying(v, chosen, value))
    for key in ("allOf", "anyOf", "oneOf"):
        for s in schema.get(key, []):
            out.extend(applying(v, s, value))
    return out


def written_paths(v, schema, value, prefix=""):
    """Every key path `value` sets, read as the schema reads it (a name-keyed mapping's names as `*`)."""
    paths = set()
    for s in applying(v, schema, value):
        if isinstance(value, dict) and "properties" in s:
            for name, sub in value.items():
                if name in s["properties"]:
                    path = prefix + ("." if prefix else "") + name
                    paths.add(path)
                    paths |= written_paths(v, s["properties"][name], sub, path)
        elif isinstance(value, dict) and isinstance(s.get("additionalProperties"), dict):
            for sub in value.values():
                paths |= written_paths(v, s["additionalProperties"], sub, prefix + ".*")
        elif isinstance(value, list) and isinstance(s.get("items"), dict):
            for sub in value:
                paths |= written_paths(v, s["items"], sub, prefix + "[]")
    return paths


# The readers' names in messages, as key path prefixes.
READER_PATHS = [
    (r"^top level$", ""),
    (r"^downstream '[^']*'", "downstreams.*"),
    (r"^param '[^']*'", "routes[].params.*"),
    (r"^call( '[^']*')?", "routes[].calls[]"),
    (r"^route( '[^']*')?\.rate_limit", "routes[].rate_limit[]"),
    (r"^route( '[^']*')?", "routes[]"),
    (r"^(server|limits|log|admin|shutdown|tracing|redis)", r"\1"),
]

# Readers of a mapping keyed by names the configuration chooses (a JWT's claims), not by keys: what they
# ask for are names, so only the mapping's own path is checked.
NAME_KEYED_READERS = [r"\.auth\.jwt\.(claim_values|forward_claims)$"]


def reader_path(reader):
    for pattern, replacement in READER_PATHS:
        path, n = re.subn(pattern, replacement, reader)
        if n:
            return path
    return None


# ---- Running the binaries


def environment(extra):
    env = dict(os.environ)
    env.update(extra)
    return env


def gateway_check(args, path, env=None, cwd=None):
    return subprocess.run([args.gateway, "--check", path], capture_output=True, text=True, timeout=30,
                          env=env, cwd=cwd)


def known_keys(args, path, env):
    r = subprocess.run([args.known_keys, path], capture_output=True, text=True, timeout=30, env=env)
    if r.returncode not in (0, 1):
        raise RuntimeError("config_known_keys %s: exit %d: %s" % (path, r.returncode, r.stderr))
    keys, errors = [], []
    for line in r.stdout.splitlines():
        fields = line.split("\t")
        if fields[0] == "key":
            keys.append((fields[1], fields[2]))
        elif fields[0] == "error":
            errors.append(fields[1])
    return keys, errors


def every_key_environment(directory):
    """SCHEMA_TEST_DIR with what every_key.yaml names: a certificate and its key, a SQLite file."""
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
                    "-keyout", os.path.join(directory, "tls.key"), "-out", os.path.join(directory, "tls.crt")],
                   check=True, capture_output=True, timeout=60)
    open(os.path.join(directory, "offers.db"), "wb").close()
    return environment({"SCHEMA_TEST_DIR": directory})


# ---- The tests


def find_configs(source):
    found = []
    for top in CONFIG_DIRS:
        for directory, subdirs, files in os.walk(os.path.join(source, top)):
            subdirs.sort()
            for name in sorted(files):
                if not name.endswith((".yaml", ".yml")):
                    continue
                path = os.path.join(directory, name)
                try:
                    document = yaml12.load(path)
                except Exception:  # not YAML at all (a deliberately broken seed): listed or refused below
                    document = {"routes": None}
                if isinstance(document, dict) and ("routes" in document or "downstreams" in document):
                    found.append(os.path.relpath(path, source))
    return found


def test_shipped(args, v):
    configs = find_configs(args.source)
    for wanted in ["config/gateway.yaml", "deploy/base/config/gateway.yaml"]:
        if wanted not in configs:
            fail("%s was not found among the configurations" % wanted)
    with tempfile.TemporaryDirectory() as directory:
        env = every_key_environment(directory)  # every_key.yaml's files
        env.update(SHIPPED_ENVIRONMENT)
        check_shipped(args, v, configs, env)
    for relative in DELIBERATELY_INVALID - set(configs):
        fail("%s is listed as deliberately invalid but was not found" % relative)


def check_shipped(args, v, configs, env):
    for relative in configs:
        path = os.path.join(args.source, relative)
        _, errors = known_keys(args, path, env)
        if relative in DELIBERATELY_INVALID:
            if not errors:
                fail("%s is listed as deliberately invalid but loads: take it off the list" % relative)
            else:
                print("skipped (deliberately invalid, %d errors): %s" % (len(errors), relative))
            continue
        for e in errors:
            fail("%s: the loader refuses it: %s" % (relative, e))
        for e in schema_errors(v, yaml12.load(path)):
            fail("%s: the schema refuses it: %s" % (relative, e))
        print("validated: %s" % relative)


# A configuration both must accept; each case below edits it into one both must refuse.
VALID = """\
server:
  listen: 127.0.0.1:0
  threads: 2
log:
  level: info
limits:
  max_connections: 100
downstreams:
  inventory:
    url: http://127.0.0.1:9
    connect_timeout: 100ms
    coalesce: false
    retry:
      on_status: [502]
  db:
    kind: sql
    driver: postgres
    dsn: host=127.0.0.1 port=9
    query: SELECT :sku AS sku
routes:
  - path: /api/offer
    deadline: 800ms
    params:
      sku: {required: true}
    calls:
      - name: inventory
        downstream: inventory
        path: /inventory?sku={sku}
        headers:
          set: {X-Api: "1"}
      - name: db
        downstream: db
  - path_prefix: /static/
    proxy:
      downstream: inventory
"""

INVALID = [
    ("an unknown top-level key", "log:\n", "colour: blue\nlog:\n"),
    ("a misspelled key", "    connect_timeout: 100ms\n", "    conect_timeout: 100ms\n"),
    ("a string where a number goes", "  threads: 2\n", "  threads: many\n"),
    ("a number out of range", "  threads: 2\n", "  threads: 1000\n"),
    ("a negative number", "  max_connections: 100\n", "  max_connections: -1\n"),
    ("a bad enum value", "  level: info\n", "  level: verbose\n"),
    ("a duration without a unit", "    deadline: 800ms\n", "    deadline: 800\n"),
    ("a zero duration where it must be positive", "    deadline: 800ms\n", "    deadline: 0ms\n"),
    ("a boolean written yes", "    coalesce: false\n", "    coalesce: yes\n"),
    ("a call without its downstream", "        downstream: inventory\n        path:", "        path:"),
    ("a route without a path", "  - path: /api/offer\n", "  - deadline: 1s\n"),
    ("a route with both path and path_prefix", "  - path: /api/offer\n",
     "  - path: /api/offer\n    path_prefix: /api/\n"),
    ("a misspelled list of calls", "    calls:\n      - name: inventory", "    cals:\n      - name: inventory"),
    ("an empty list of routes", VALID[VALID.index("routes:"):], "routes: []\n"),
    ("an http downstream without a url", "    url: http://127.0.0.1:9\n", ""),
    ("a url that is not http", "    url: http://127.0.0.1:9\n", "    url: ftp://127.0.0.1:9\n"),
    ("a sql downstream without a driver", "    driver: postgres\n", ""),
    ("a sql driver that does not exist", "    driver: postgres\n", "    driver: mysql\n"),
    ("read_only on a postgres downstream", "    driver: postgres\n", "    driver: postgres\n    read_only: true\n"),
    ("a query on an http downstream", "    coalesce: false\n", "    coalesce: false\n    query: SELECT 1\n"),
    ("a status that is no HTTP status", "      on_status: [502]\n", "      on_status: [700]\n"),
    ("a hedge delay below p50", "    coalesce: false\n", "    coalesce: false\n    hedge: {delay: p10}\n"),
    ("a downstream name with a space", "  inventory:\n    url", "  my inventory:\n    url"),
    ("a header value that is a number", "{X-Api: \"1\"}", "{X-Api: 1}"),
    ("a call body that is not client", "        path: /inventory?sku={sku}\n",
     "        path: /inventory?sku={sku}\n        method: POST\n        body: json\n"),
    ("remove in a route's headers", "    deadline: 800ms\n", "    deadline: 800ms\n    headers: {remove: [Cookie]}\n"),
    ("cache_control in a call's response_headers", "        downstream: db\n",
     "        downstream: db\n        response_headers: {cache_control: true}\n"),
    ("calls on a proxy route", "    proxy:\n",
     "    calls: [{name: a, downstream: inventory, path: /a}]\n    proxy:\n"),
    ("listener TLS without its key", "  threads: 2\n", "  threads: 2\n  tls: {cert_file: /etc/x.crt}\n"),
    ("a mapping where a list goes", "      on_status: [502]\n", "      on_status: {code: 502}\n"),
    ("CORS without origins", "    deadline: 800ms\n", "    deadline: 800ms\n    cors: {allow_methods: [GET]}\n"),
    ("admin.require_token without a token", "limits:\n", "admin:\n  require_token: true\nlimits:\n"),
    ("a downstream url with credentials", "    url: http://127.0.0.1:9\n", "    url: http://user:pw@127.0.0.1:9\n"),
    ("a '*' segment in a route path", "  - path: /api/offer\n", "  - path: /api/*\n"),
    ("a pass_status that is no error status", "          set: {X-Api: \"1\"}\n",
     "          set: {X-Api: \"1\"}\n        pass_status: [302]\n"),
    ("a pass_status listed twice", "          set: {X-Api: \"1\"}\n",
     "          set: {X-Api: \"1\"}\n        pass_status: [401, 401]\n"),
    ("a parameter in a body_template member name", "        path: /inventory?sku={sku}\n",
     "        path: /inventory?sku={sku}\n        method: POST\n        body_template: {'{sku}': 1}\n"),
    ("auth with both jwt and api_key", "    deadline: 800ms\n",
     "    deadline: 800ms\n    auth:\n      jwt: {jwks_file: /etc/jwks.json}\n      api_key: {keys_file: /etc/keys}\n"),
    ("a rate_limit without its rate", "    deadline: 800ms\n",
     "    deadline: 800ms\n    rate_limit: [{key: client, burst: 10}]\n"),
    ("a rate that is no rate", "    deadline: 800ms\n", "    deadline: 800ms\n    rate_limit: [{rate: 100/week}]\n"),
    ("jwt with neither jwks_file nor jwks_url", "    deadline: 800ms\n",
     "    deadline: 800ms\n    auth:\n      jwt: {issuers: [https://id.example]}\n"),
    ("a redis url that is not redis://", "limits:\n", "redis:\n  url: http://127.0.0.1:6379\nlimits:\n"),
    ("a jwks_url in plain http", "    deadline: 800ms\n",
     "    deadline: 800ms\n    auth:\n      jwt: {jwks_url: 'http://id.example/jwks'}\n"),
]


def test_invalid(args, v):
    for e in schema_errors(v, yaml12.CoreLoader(VALID).get_single_data()):
        fail("the valid base: the schema refuses it: %s" % e)
    with tempfile.TemporaryDirectory() as directory:
        base = os.path.join(directory, "valid.yaml")
        with open(base, "w") as f:
            f.write(VALID)
        r = gateway_check(args, base)
        if r.returncode != 0:
            fail("the valid base: gateway --check refuses it: %s" % r.stderr)
        for i, (what, old, new) in enumerate(INVALID):
            text = VALID.replace(old, new, 1)
            if old not in VALID or text == VALID:
                fail("%s: the edit does not apply" % what)
                continue
            path = os.path.join(directory, "case-%02d.yaml" % i)
            with open(path, "w") as f:
                f.write(text)
            refused_by_schema = bool(schema_errors(v, yaml12.CoreLoader(text).get_single_data()))
            if not refused_by_schema:
                fail("%s: the schema accepts it" % what)
            r = gateway_check(args, path)
            if r.returncode != 2:
                fail("%s: gateway --check exits %d, not 2: %s" % (what, r.returncode, r.stderr))
            elif refused_by_schema:
                print("refused by both: %s (--check: %s)" % (what, r.stderr.strip().splitlines()[0]))
    if len(INVALID) < 15:
        fail("fewer than 15 invalid cases")


def every_key_path(args):
    return os.path.join(args.source, "tests", "config_schema", "every_key.yaml")


def test_every_key(args, v):
    path = every_key_path(args)
    with tempfile.TemporaryDirectory() as directory:
        r = gateway_check(args, path, env=every_key_environment(directory))
        if r.returncode != 0:
            fail("gateway --check refuses %s: %s" % (path, r.stderr))
    document = yaml12.load(path)
    for e in schema_errors(v, document):
        fail("the schema refuses %s: %s" % (path, e))
    declared = declared_paths(v, v.schema)
    written = written_paths(v, v.schema, document)
    for p in sorted(declared - written):
        fail("every_key.yaml does not set %s, which the schema declares" % p)
    print("%d key paths declared by the schema, %d set by every_key.yaml" % (len(declared), len(declared & written)))


def test_loader_keys(args, v):
    with tempfile.TemporaryDirectory() as directory:
        keys, errors = known_keys(args, every_key_path(args), every_key_environment(directory))
    for e in errors:
        fail("every_key.yaml does not load: %s" % e)
    declared = declared_paths(v, v.schema)
    readers = set()
    for reader, key in keys:
        prefix = reader_path(reader)
        if prefix is None:
            fail("a reader named %r: teach READER_PATHS its path" % reader)
            continue
        readers.add(reader)
        path = prefix + ("." if prefix else "") + key
        if any(re.search(pattern, reader) for pattern in NAME_KEYED_READERS):
            path = prefix
        if path not in declared:
            fail("the loader knows %s (reader %r), the schema does not declare it" % (path, reader))
    if len(keys) < 100:
        fail("only %d keys recorded: does config_known_keys still collect them?" % len(keys))
    print("%d keys known by %d readers of the loader" % (len(keys), len(readers)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", required=True)
    parser.add_argument("--gateway", required=True)
    parser.add_argument("--known-keys", required=True)
    parser.add_argument("test", choices=["shipped", "invalid", "every-key", "loader-keys"])
    args = parser.parse_args()
    v = validator(args.source)
    {"shipped": test_shipped, "invalid": test_invalid, "every-key": test_every_key,
     "loader-keys": test_loader_keys}[args.test](args, v)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
