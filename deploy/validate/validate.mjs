#!/usr/bin/env node
// Offline validation of rendered Kubernetes manifests (multi-document YAML, e.g. `kubectl kustomize` output).
//
//   node validate.mjs [--keep-generated] FILE...
//
// Two checks per document:
//   1. schema: the kubernetes-models class for its apiVersion/kind validates it against the OpenAPI schema
//      (types, required fields, enums, formats). An apiVersion/kind without a class here is an error, but
//      for the custom resources of CUSTOM_RESOURCES (PodMonitor), which get a structural check instead.
//   2. types: every document becomes a typed object literal in a generated TypeScript file, compiled with
//      tsc (tsconfig.json: strict, noEmit). Excess property checks reject misspelled or unknown fields,
//      which the schema check lets through.
// Errors name the file, the document (Kind/name) and the field path. Exit status: 0 all valid, 1 invalid,
// 2 usage or tool failure.

import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

const here = dirname(fileURLToPath(import.meta.url));

// apiVersion/kind -> kubernetes-models module and the interface used for the typed literal.
const MODELS = {
  "v1/ConfigMap": { module: "kubernetes-models/v1/ConfigMap", type: "IConfigMap" },
  "v1/Secret": { module: "kubernetes-models/v1/Secret", type: "ISecret" },
  "v1/Service": { module: "kubernetes-models/v1/Service", type: "IService" },
  "apps/v1/Deployment": { module: "kubernetes-models/apps/v1/Deployment", type: "IDeployment" },
  "autoscaling/v2/HorizontalPodAutoscaler": {
    module: "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler",
    type: "IHorizontalPodAutoscaler",
  },
  "networking.k8s.io/v1/NetworkPolicy": {
    module: "kubernetes-models/networking.k8s.io/v1/NetworkPolicy",
    type: "INetworkPolicy",
  },
  "networking.k8s.io/v1/Ingress": {
    module: "kubernetes-models/networking.k8s.io/v1/Ingress",
    type: "IIngress",
  },
  "policy/v1/PodDisruptionBudget": {
    module: "kubernetes-models/policy/v1/PodDisruptionBudget",
    type: "IPodDisruptionBudget",
  },
};

// Custom resources (CRDs) have no kubernetes-models class: each kind here gets a structural check of the
// fields the gateway's manifests rely on instead of the schema and type checks. Returns error messages.
const isName = (v) => typeof v === "string" && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(v);
const CUSTOM_RESOURCES = {
  "monitoring.coreos.com/v1/PodMonitor": (data) => {
    const errors = [];
    const spec = data.spec ?? {};
    if (!isName(data.metadata?.name)) errors.push("/metadata/name missing or not a DNS label");
    const labels = spec.selector?.matchLabels;
    if (!labels || typeof labels !== "object" || Object.keys(labels).length === 0) {
      errors.push("/spec/selector/matchLabels must select the pods");
    }
    const endpoints = spec.podMetricsEndpoints;
    if (!Array.isArray(endpoints) || endpoints.length === 0) errors.push("/spec/podMetricsEndpoints is empty");
    (endpoints ?? []).forEach((e, i) => {
      if (!isName(e?.port)) errors.push(`/spec/podMetricsEndpoints/${i}/port must name a container port`);
      if (e?.path !== undefined && !String(e.path).startsWith("/")) {
        errors.push(`/spec/podMetricsEndpoints/${i}/path must start with /`);
      }
    });
    const known = ["selector", "podMetricsEndpoints", "namespaceSelector", "jobLabel", "podTargetLabels",
      "sampleLimit", "targetLimit"];
    for (const key of Object.keys(spec)) if (!known.includes(key)) errors.push(`/spec/${key} is not expected here`);
    return errors;
  },
  // deploy/examples/gateway-api: the route must attach to a Gateway and send to a Service port.
  "gateway.networking.k8s.io/v1/HTTPRoute": (data) => {
    const errors = [];
    const spec = data.spec ?? {};
    if (!isName(data.metadata?.name)) errors.push("/metadata/name missing or not a DNS label");
    const parents = spec.parentRefs;
    if (!Array.isArray(parents) || parents.length === 0) errors.push("/spec/parentRefs is empty");
    (parents ?? []).forEach((p, i) => {
      if (!isName(p?.name)) errors.push(`/spec/parentRefs/${i}/name must name a Gateway`);
    });
    const rules = spec.rules;
    if (!Array.isArray(rules) || rules.length === 0) errors.push("/spec/rules is empty");
    (rules ?? []).forEach((r, i) => {
      const backends = r?.backendRefs;
      if (!Array.isArray(backends) || backends.length === 0) errors.push(`/spec/rules/${i}/backendRefs is empty`);
      (backends ?? []).forEach((b, j) => {
        if (!isName(b?.name)) errors.push(`/spec/rules/${i}/backendRefs/${j}/name must name a Service`);
        if (!Number.isInteger(b?.port) || b.port < 1 || b.port > 65535) {
          errors.push(`/spec/rules/${i}/backendRefs/${j}/port must be a port number`);
        }
      });
      (r?.matches ?? []).forEach((m, j) => {
        const value = m?.path?.value;
        if (value !== undefined && !String(value).startsWith("/")) {
          errors.push(`/spec/rules/${i}/matches/${j}/path/value must start with /`);
        }
      });
    });
    const known = ["parentRefs", "hostnames", "rules"];
    for (const key of Object.keys(spec)) if (!known.includes(key)) errors.push(`/spec/${key} is not expected here`);
    return errors;
  },
};
let customChecked = 0;

const args = process.argv.slice(2);
const keepGenerated = args.includes("--keep-generated");
const files = args.filter((a) => a !== "--keep-generated");
if (files.length === 0 || files.some((f) => f.startsWith("-"))) {
  console.error("usage: node validate.mjs [--keep-generated] FILE...");
  process.exit(2);
}

let failures = 0;
const fail = (where, message) => {
  failures++;
  console.error(`${where}: ${message}`);
};

// ---- Parse and schema-validate ----------------------------------------------------------------------------

const sources = []; // { file, docs: [{ label, model, data }] }
for (const file of files) {
  let text;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    fail(file, `cannot read: ${err.message}`);
    continue;
  }
  const docs = [];
  parseAllDocuments(text).forEach((parsed, index) => {
    if (parsed.errors.length > 0) {
      for (const err of parsed.errors) fail(`${file}: document ${index}`, `YAML: ${err.message.split("\n")[0]}`);
      return;
    }
    const data = parsed.toJS();
    if (data === null || data === undefined) return; // empty document
    if (typeof data !== "object" || Array.isArray(data)) {
      fail(`${file}: document ${index}`, "not a mapping");
      return;
    }
    const label = `${data.kind ?? "?"}/${data.metadata?.name ?? "?"}`;
    const custom = CUSTOM_RESOURCES[`${data.apiVersion}/${data.kind}`];
    if (custom) {
      for (const message of custom(data)) fail(`${file}: ${label}`, `custom resource: ${message}`);
      customChecked++;
      console.log(`${file}: ${label}: custom resource, structural check only`);
      return;
    }
    const model = MODELS[`${data.apiVersion}/${data.kind}`];
    if (!model) {
      fail(`${file}: ${label}`, `unsupported apiVersion/kind ${data.apiVersion}/${data.kind}`);
      return;
    }
    docs.push({ label, model, data });
  });
  sources.push({ file, docs });
}

for (const { file, docs } of sources) {
  for (const { label, model, data } of docs) {
    const Class = (await import(model.module))[model.type.slice(1)];
    try {
      new Class(data).validate();
    } catch (err) {
      const detail = Array.isArray(err.errors)
        ? err.errors.map((e) => `${e.instancePath || "/"} ${e.message}`).join("; ")
        : err.message;
      fail(`${file}: ${label}`, `schema: ${detail}`);
    }
  }
}

// ---- Typed literals, compiled with tsc --------------------------------------------------------------------

const identifier = /^[A-Za-z_$][\w$]*$/;
const pathKey = (key) => (identifier.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`);
const propertyName = (key) => (identifier.test(key) ? key : JSON.stringify(key));

// Appends `value` as TypeScript literal lines, each remembering the field path it belongs to.
function emit(out, value, path, depth, prefix, suffix) {
  const pad = "  ".repeat(depth);
  if (Array.isArray(value)) {
    if (value.length === 0) return void out.push({ text: `${pad}${prefix}[]${suffix}`, path });
    out.push({ text: `${pad}${prefix}[`, path });
    value.forEach((item, i) => emit(out, item, `${path}[${i}]`, depth + 1, "", ","));
    out.push({ text: `${pad}]${suffix}`, path });
  } else if (value !== null && typeof value === "object") {
    const keys = Object.keys(value);
    if (keys.length === 0) return void out.push({ text: `${pad}${prefix}{}${suffix}`, path });
    out.push({ text: `${pad}${prefix}{`, path });
    for (const key of keys) {
      emit(out, value[key], `${path}${pathKey(key)}`, depth + 1, `${propertyName(key)}: `, ",");
    }
    out.push({ text: `${pad}}${suffix}`, path });
  } else {
    out.push({ text: `${pad}${prefix}${JSON.stringify(value)}${suffix}`, path });
  }
}

const generatedRoot = join(here, "generated");
mkdirSync(generatedRoot, { recursive: true });
const runDir = mkdtempSync(join(generatedRoot, "run-"));
writeFileSync(
  join(runDir, "tsconfig.json"),
  JSON.stringify({ extends: "../../tsconfig.json", include: ["*.ts"] }, null, 2) + "\n",
);

const lineOwners = new Map(); // generated file name -> per line: { where, path }
let typedDocs = 0;
sources.forEach(({ file, docs }, fileIndex) => {
  if (docs.length === 0) return;
  const name = `f${fileIndex}-${basename(file).replace(/[^A-Za-z0-9_-]/g, "_")}.ts`;
  const lines = [{ text: `// Generated from ${file} by validate.mjs.`, path: null }];
  const types = [...new Set(docs.map((d) => d.model.type))];
  for (const type of types) {
    const { module } = docs.find((d) => d.model.type === type).model;
    lines.push({ text: `import type { ${type} } from ${JSON.stringify(module)};`, path: null });
  }
  docs.forEach(({ label, model, data }, i) => {
    const start = lines.length;
    lines.push({ text: "", path: null });
    emit(lines, data, "", 0, `export const doc${i}: ${model.type} = `, ";");
    for (let l = start; l < lines.length; l++) lines[l].where = `${file}: ${label}`;
    typedDocs++;
  });
  writeFileSync(join(runDir, name), lines.map((l) => l.text).join("\n") + "\n");
  lineOwners.set(name, lines);
});

if (typedDocs > 0) {
  const tsc = spawnSync(join(here, "node_modules", ".bin", "tsc"), ["-p", runDir, "--pretty", "false"], {
    encoding: "utf8",
  });
  if (tsc.error) {
    console.error(`tsc: ${tsc.error.message} (run npm ci in ${relative(process.cwd(), here) || "."})`);
    process.exit(2);
  }
  if (tsc.status !== 0) {
    // "<file>(<line>,<col>): error TSnnnn: <message>", continuation lines indented.
    const diagnostic = /^(.*?)\((\d+),(\d+)\): (error|warning) (TS\d+): (.*)$/;
    let reported = 0;
    for (const raw of (tsc.stdout + tsc.stderr).split("\n")) {
      if (raw.trim() === "") continue;
      const m = raw.match(diagnostic);
      if (!m) {
        console.error(reported > 0 && /^\s/.test(raw) ? `    ${raw.trim()}` : `tsc: ${raw}`);
        continue;
      }
      const owner = lineOwners.get(basename(m[1]))?.[Number(m[2]) - 1];
      const where = owner?.where ?? resolve(runDir, m[1]);
      const field = owner?.path ? ` ${owner.path.replace(/^\./, "")}:` : "";
      fail(where, `types:${field} ${m[6]} (${m[5]})`);
      reported++;
    }
    if (reported === 0) fail("tsc", `exit status ${tsc.status}`);
  }
}

if (keepGenerated) console.error(`generated TypeScript kept in ${runDir}`);
else {
  rmSync(runDir, { recursive: true, force: true });
  try {
    rmdirSync(generatedRoot); // only when empty: another run may still use it
  } catch {}
}

// ---- Summary ---------------------------------------------------------------------------------------------

for (const { file, docs } of sources) {
  const count = `${docs.length} document${docs.length === 1 ? "" : "s"}`;
  console.log(`${file}: ${count}: ${docs.map((d) => d.label).join(", ")}`);
}
if (failures > 0) {
  console.error(`${failures} error(s)`);
  process.exit(1);
}
console.log(
  `valid: schema and types of ${typedDocs} documents, ${customChecked} custom resources, in ${sources.length} file(s)`,
);
