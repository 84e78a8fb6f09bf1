// Validates the Kubernetes objects of deploy/k8s offline: each object against the Kubernetes
// 1.27 schemas of the npm package kubernetes-models (types and required fields; it does not
// report unknown fields), then the properties the deployment relies on (probes, security,
// shutdown grace, references between objects, the flags sparrowd knows).
//
//   node validate_k8s.mjs [--sparrowd-help FILE] rendered NAME=FILE...   kustomize output
//   node validate_k8s.mjs raw DIR...                 the complete objects listed in resources:
//
// Prints one line per problem and exits 1 when there is any.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { parseAllDocuments, parse } from "yaml";

const problems = [];
const fail = (where, msg) => problems.push(`${where}: ${msg}`);

// The model class of an object: kubernetes-models/<group>/<version>/<Kind>, "v1" for core.
async function validateSchema(where, obj) {
  if (!obj || typeof obj.apiVersion !== "string" || typeof obj.kind !== "string") {
    return fail(where, "not a Kubernetes object (apiVersion and kind missing)");
  }
  let model;
  try {
    model = (await import(`kubernetes-models/${obj.apiVersion}/${obj.kind}`))[obj.kind];
  } catch {
    return fail(where, `no 1.27 schema for ${obj.apiVersion} ${obj.kind}`);
  }
  try {
    new model(obj).validate();
  } catch (e) {
    fail(where, `${obj.kind} ${obj.metadata?.name}: ${e.message}`);
  }
}

function readYamlDocs(file) {
  const docs = parseAllDocuments(readFileSync(file, "utf8"));
  for (const d of docs) if (d.errors.length) fail(file, d.errors[0].message);
  return docs.map((d) => d.toJS()).filter((o) => o != null);
}

// Kubernetes quantities as numbers: cpu in cores, memory in bytes.
function quantity(q) {
  const m = /^([0-9.]+)(m|k|Ki|M|Mi|G|Gi|T|Ti)?$/.exec(String(q));
  if (!m) return NaN;
  const scale = { m: 1e-3, k: 1e3, Ki: 1024, M: 1e6, Mi: 1024 ** 2, G: 1e9, Gi: 1024 ** 3,
                  T: 1e12, Ti: 1024 ** 4 };
  return Number(m[1]) * (m[2] ? scale[m[2]] : 1);
}

const matches = (selector, labels) =>
  selector && Object.keys(selector).length > 0 &&
  Object.entries(selector).every(([k, v]) => labels?.[k] === v);

const VOLUME_SOURCES = ["emptyDir", "persistentVolumeClaim", "secret", "configMap", "hostPath",
                        "projected", "downwardAPI", "ephemeral", "csi", "nfs"];

// What every overlay must have; returns the pieces the overlay checks look at.
function checkCommon(name, objs, knownFlags) {
  const byKind = (kind) => objs.filter((o) => o.kind === kind);
  const deployments = byKind("Deployment");
  if (deployments.length !== 1) return fail(name, `${deployments.length} Deployments, want 1`);
  const dep = deployments[0];
  const pod = dep.spec.template.spec;
  const podLabels = dep.spec.template.metadata?.labels;
  const where = `${name}: Deployment ${dep.metadata.name}`;
  if (!matches(dep.spec.selector?.matchLabels, podLabels)) fail(where, "selector misses the pod labels");
  if (!(pod.terminationGracePeriodSeconds >= 60)) {
    fail(where, `terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds}, want >= 60`);
  }
  if (pod.securityContext?.runAsNonRoot !== true) fail(where, "runAsNonRoot is not true");
  if (pod.securityContext?.runAsUser !== 10001) fail(where, "runAsUser is not 10001 (the image's user)");
  if (pod.containers.length !== 1) return fail(where, "want one container");
  const c = pod.containers[0];
  if (c.securityContext?.readOnlyRootFilesystem !== true) fail(where, "readOnlyRootFilesystem is not true");
  if (c.securityContext?.allowPrivilegeEscalation !== false) fail(where, "allowPrivilegeEscalation is not false");
  const grpcPort = c.ports?.find((p) => p.name === "grpc")?.containerPort;
  if (!grpcPort) fail(where, "no container port named grpc");
  for (const probe of ["startupProbe", "readinessProbe", "livenessProbe"]) {
    if (c[probe]?.grpc?.port !== grpcPort) fail(where, `${probe} is not a grpc probe on port ${grpcPort}`);
  }
  for (const kind of ["requests", "limits"]) {
    for (const r of ["cpu", "memory"]) {
      if (!(quantity(c.resources?.[kind]?.[r]) > 0)) fail(where, `resources.${kind}.${r} missing`);
    }
  }

  // Volumes: one source each, every mount backed by one, /tmp writable through an emptyDir,
  // every claim, Secret and key they name rendered too.
  const volumes = Object.fromEntries((pod.volumes ?? []).map((v) => [v.name, v]));
  for (const v of pod.volumes ?? []) {
    const sources = VOLUME_SOURCES.filter((s) => v[s] != null);
    if (sources.length !== 1) fail(where, `volume ${v.name} has sources [${sources}], want one`);
    if (v.persistentVolumeClaim && !byKind("PersistentVolumeClaim").some(
        (p) => p.metadata.name === v.persistentVolumeClaim.claimName)) {
      fail(where, `volume ${v.name}: no PersistentVolumeClaim ${v.persistentVolumeClaim.claimName}`);
    }
    if (v.secret) {
      const s = byKind("Secret").find((x) => x.metadata.name === v.secret.secretName);
      if (!s) fail(where, `volume ${v.name}: no Secret ${v.secret.secretName}`);
      for (const item of v.secret.items ?? []) {
        if (s && !(item.key in { ...s.data, ...s.stringData })) {
          fail(where, `volume ${v.name}: Secret ${s.metadata.name} has no key ${item.key}`);
        }
      }
    }
  }
  for (const m of c.volumeMounts ?? []) {
    if (!volumes[m.name]) fail(where, `volumeMount ${m.mountPath}: no volume ${m.name}`);
  }
  const tmp = (c.volumeMounts ?? []).find((m) => m.mountPath === "/tmp");
  if (!tmp || !volumes[tmp.name]?.emptyDir) fail(where, "/tmp is not an emptyDir (the root file system is read-only)");

  // Environment: each $(VAR) in the arguments is defined, from a rendered ConfigMap key, a
  // rendered Secret key or the downward API; Kubernetes would otherwise pass "$(VAR)" literally.
  const env = {};
  for (const ref of c.envFrom ?? []) {
    const cm = byKind("ConfigMap").find((x) => x.metadata.name === ref.configMapRef?.name);
    if (!cm) { fail(where, `envFrom: no ConfigMap ${ref.configMapRef?.name}`); continue; }
    for (const [k, v] of Object.entries(cm.data ?? {})) env[k] = { value: v };
  }
  for (const e of c.env ?? []) {
    const sk = e.valueFrom?.secretKeyRef;
    if (sk) {
      const s = byKind("Secret").find((x) => x.metadata.name === sk.name);
      if (!s || !(sk.key in { ...s.data, ...s.stringData })) fail(where, `env ${e.name}: no Secret key ${sk.name}/${sk.key}`);
    }
    env[e.name] = e;
  }
  const args = c.args ?? [];
  for (const a of args) {
    for (const [, v] of a.matchAll(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g)) {
      if (!env[v]) fail(where, `argument ${a}: $(${v}) is not defined`);
    }
    const flag = /^(--[a-z-]+)/.exec(a)?.[1];
    if (knownFlags && flag && !knownFlags.has(flag)) fail(where, `argument ${a}: sparrowd has no ${flag}`);
  }
  const flagValue = (flag) => {
    const a = args.find((x) => x.startsWith(`${flag}=`));
    if (!a) return undefined;
    return a.slice(flag.length + 1).replace(/\$\((\w+)\)/g, (_, v) => env[v]?.value ?? `$(${v})`);
  };
  // The jobs' memory budget fits the container's limit, one job fits the budget, and there are
  // no more workers than CPUs (sparrowd's defaults read the node, not the limits).
  const limit = quantity(c.resources?.limits?.memory);
  const total = Number(flagValue("--max-total-job-memory"));
  const perJob = Number(flagValue("--max-job-memory"));
  if (!(total > 0 && total < limit)) fail(where, `--max-total-job-memory ${total} is not below the memory limit ${limit}`);
  if (!(perJob > 0 && perJob <= total)) fail(where, `--max-job-memory ${perJob} exceeds --max-total-job-memory`);
  const workers = Number(flagValue("--workers"));
  if (!(workers >= 1 && workers <= Math.ceil(quantity(c.resources?.limits?.cpu)))) {
    fail(where, `--workers ${workers} does not fit the cpu limit`);
  }

  // Services reach the pods, on ports the container has.
  const portNames = new Set((c.ports ?? []).map((p) => p.name));
  const services = byKind("Service");
  for (const s of services) {
    if (!matches(s.spec.selector, podLabels)) fail(`${name}: Service ${s.metadata.name}`, "selector misses the pod labels");
    for (const p of s.spec.ports) {
      if (typeof p.targetPort === "string" && !portNames.has(p.targetPort)) {
        fail(`${name}: Service ${s.metadata.name}`, `targetPort ${p.targetPort} is not a container port`);
      }
    }
  }
  for (const port of ["grpc", "http"]) {
    if (!services.some((s) => s.spec.ports.some((p) => p.targetPort === port))) fail(name, `no Service for ${port}`);
  }
  return { dep, pod, c, env, args, flagValue, podLabels, byKind };
}

function checkSingle(name, k) {
  const where = `${name}: Deployment ${k.dep.metadata.name}`;
  if (k.dep.spec.replicas !== 1) fail(where, `replicas ${k.dep.spec.replicas}, want 1 (SQLite)`);
  if (k.dep.spec.strategy?.type !== "Recreate") fail(where, "strategy is not Recreate");
  const dataDir = k.flagValue("--data-dir");
  const mount = k.c.volumeMounts?.find((m) => m.mountPath === dataDir);
  const volume = k.pod.volumes?.find((v) => v.name === mount?.name);
  if (!volume?.persistentVolumeClaim) fail(where, `--data-dir ${dataDir} is not on a PersistentVolumeClaim`);
  if (k.flagValue("--store") !== undefined) fail(where, "--store set: the single overlay keeps SQLite");
  if (k.byKind("PersistentVolumeClaim").length !== 1) fail(name, "want one PersistentVolumeClaim");
}

function checkHa(name, k) {
  const where = `${name}: Deployment ${k.dep.metadata.name}`;
  if (k.dep.spec.replicas !== 3) fail(where, `replicas ${k.dep.spec.replicas}, want 3`);
  if (k.byKind("PersistentVolumeClaim").length !== 0) fail(name, "a PersistentVolumeClaim: the store is PostgreSQL");
  const pdbs = k.byKind("PodDisruptionBudget");
  if (pdbs.length !== 1) fail(name, `${pdbs.length} PodDisruptionBudgets, want 1`);
  for (const p of pdbs) {
    if (!matches(p.spec.selector?.matchLabels, k.podLabels)) fail(name, `PodDisruptionBudget ${p.metadata.name} selects no sparrowd pod`);
  }
  const fromEnv = (flag) => /^\$\((\w+)\)$/.exec(k.args.find((a) => a.startsWith(`${flag}=`))?.slice(flag.length + 1) ?? "")?.[1];
  const store = fromEnv("--store");
  if (!store || !k.env[store]?.valueFrom?.secretKeyRef) fail(where, "--store is not $(VAR) from a Secret");
  if (!k.env.PGPASSWORD?.valueFrom?.secretKeyRef) fail(where, "PGPASSWORD is not from a Secret");
  const replica = fromEnv("--replica-name");
  if (k.env[replica]?.valueFrom?.fieldRef?.fieldPath !== "metadata.name") fail(where, "--replica-name is not the pod's name (downward API)");
  const renew = Number(k.flagValue("--lease-renew-seconds"));
  const expiry = Number(k.flagValue("--lease-expiry-seconds"));
  if (!(renew > 0 && expiry >= 3 * renew)) fail(where, `lease expiry ${expiry} s is not several renewals (${renew} s)`);
  const terms = k.pod.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? [];
  if (!terms.some((t) => t.podAffinityTerm?.topologyKey === "kubernetes.io/hostname" &&
                         matches(t.podAffinityTerm?.labelSelector?.matchLabels, k.podLabels))) {
    fail(where, "no preferred pod anti-affinity over kubernetes.io/hostname for its own pods");
  }
}

// The complete objects of a kustomization directory: its resources: that are files (patches
// are partial objects; directories are checked on their own).
function rawObjects(dir) {
  const k = parse(readFileSync(join(dir, "kustomization.yaml"), "utf8"));
  return (k.resources ?? []).filter((r) => /\.ya?ml$/.test(r))
    .flatMap((r) => readYamlDocs(join(dir, r)).map((o) => [join(dir, r), o]));
}

const argv = process.argv.slice(2);
let knownFlags = null;
if (argv[0] === "--sparrowd-help") {
  knownFlags = new Set(readFileSync(argv[1], "utf8").match(/--[a-z][a-z-]+/g));
  argv.splice(0, 2);
}
const [mode, ...rest] = argv;
let count = 0;
if (mode === "rendered") {
  for (const spec of rest) {
    const [name, file] = spec.split("=");
    const objs = readYamlDocs(file);
    count += objs.length;
    for (const o of objs) await validateSchema(name, o);
    const k = checkCommon(name, objs, knownFlags);
    if (k && name === "single") checkSingle(name, k);
    if (k && name === "ha") checkHa(name, k);
    if (k && !["single", "ha"].includes(name)) fail(name, "unknown overlay: add its checks");
  }
} else if (mode === "raw") {
  for (const dir of rest) {
    for (const [file, o] of rawObjects(dir)) { count++; await validateSchema(file, o); }
  }
} else {
  console.error("usage: validate_k8s.mjs [--sparrowd-help FILE] rendered NAME=FILE... | raw DIR...");
  process.exit(2);
}
for (const p of problems) console.log(`FAIL ${p}`);
console.log(`validate_k8s (${mode}): ${count} objects, ${problems.length} problems`);
process.exit(problems.length ? 1 : 0);
