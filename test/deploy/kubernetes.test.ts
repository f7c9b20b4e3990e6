/**
 * deploy/kubernetes (docs/kubernetes.md): the kustomize base and the Redis example are objects the
 * Kubernetes API accepts, and they fit the svc they run.
 *
 * - Schemas: every manifest file, and what `kubectl kustomize` renders from each kustomization,
 *   validates against the Kubernetes OpenAPI schemas (kubernetes-models) and names no field the API
 *   does not know. kubernetes-models' validators let unknown fields through (and so does the API
 *   server, which drops them with a warning), so a misspelt `livenesProbe` would go unnoticed: the
 *   objects are also type-checked against kubernetes-models' TypeScript types, whose excess-property
 *   check names such a field.
 * - Fit: the ConfigMap's config compiles (`svc compile --check`, the real bin/svc) with the files
 *   the Secrets provide (test values) at the paths where the Deployment mounts them; every `*_file`
 *   setting names an item of a mounted Secret and no secret is inline; the probes use svc's health
 *   endpoints on the ports of the config's listeners; the grace period covers the shutdown delay and
 *   the drain timeout; the Redis example runs two replicas on Redis with one Secret.
 * - Running: svc started with the base's config and the Deployment's own arguments, and two of them
 *   with the Redis example's config against a redis-server started with the example's redis.conf,
 *   answer the Deployment's probes with 200; on SIGTERM readiness turns 503 while liveness stays 200.
 *
 * The checks of a kustomization's Deployment and config run on the files themselves (the Redis
 * example's patch applied by `withPatch`, for the few fields it sets) and again on what kubectl
 * renders, which must agree. kubectl renders offline (the machine image's, or Debian's
 * kubernetes-client); without it those tests skip, and fail under SVC_TEST_REQUIRE_ALL=1.
 */
import { generateKeyPairSync } from 'node:crypto';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect as tlsConnect } from 'node:tls';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative } from 'node:path';
import { ConfigMap, Secret, Service, ServiceAccount } from 'kubernetes-models/v1';
import type { IContainer, IProbe, IVolume } from 'kubernetes-models/v1';
import { Deployment, StatefulSet, type IDeployment, type IStatefulSet } from 'kubernetes-models/apps/v1';
import { PodDisruptionBudget, type IPodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { NetworkPolicy, type INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { isSecretPath } from '../../compiler/settings/secret-paths.ts';
import { SETTINGS_BY_KEY } from '../../compiler/settings/table.ts';
import { DEFAULT_DRAIN_TIMEOUT_MS, DEFAULT_SHUTDOWN_DELAY_MS } from '../../runtime/process/stop-signals.ts';
import { PING_PATH, READY_PATH } from '../../runtime/proxy/probes.ts';
import { spawnSvc, type SignalledSvc } from '../e2e/svc-process.ts';
import { issue, makeCa } from '../runtime/tls/pki.ts';
import { TEST_SECRET } from '../support/compile-text.ts';
import { cli, freePort } from '../support/redis-server.ts';
import { describeWithCommands, which } from '../support/system.ts';

const ROOT = join(import.meta.dirname, '../..');
const K8S = join(ROOT, 'deploy/kubernetes');
const SVC = join(ROOT, 'bin/svc');
const BASE = 'base';
const REDIS_EXAMPLE = 'examples/redis-two-replicas';
const KUSTOMIZATIONS = [BASE, REDIS_EXAMPLE] as const;

type Json = Record<string, unknown>;

// ---------------------------------------------------------------------------------------------
// Reading the files

/**
 * Every document of a YAML file, read as Kubernetes reads manifests: YAML 1.1 (sigs.k8s.io/yaml),
 * where `0440` is octal and `yes` a boolean, unlike the `yaml` package's default 1.2.
 */
function readManifests(path: string): Json[] {
  return parseAllDocuments(readFileSync(path, 'utf8'), { version: '1.1' }).flatMap((doc) => {
    if (doc.errors.length > 0) throw new Error(`${relative(ROOT, path)}: ${doc.errors[0]!.message}`);
    const value: unknown = doc.toJS();
    return value === null ? [] : [value as Json];
  });
}

interface Kustomization {
  readonly bases?: readonly string[];
  readonly resources?: readonly string[];
  readonly patchesStrategicMerge?: readonly string[];
  readonly configMapGenerator?: readonly { readonly name: string; readonly behavior?: string; readonly files: readonly string[] }[];
  readonly images?: readonly { readonly name: string; readonly newName?: string; readonly newTag?: string }[];
}

function kustomization(dir: string): Kustomization {
  return readManifests(join(K8S, dir, 'kustomization.yaml'))[0] as Kustomization;
}

/** The manifest files a kustomization lists (its own; a base's are its base's). */
function resourceFiles(dir: string): string[] {
  return (kustomization(dir).resources ?? []).map((f) => join(K8S, dir, f));
}

function generatorFile(dir: string, configMap: string, file: string): string | undefined {
  const gen = kustomization(dir).configMapGenerator?.find((g) => g.name === configMap);
  const name = gen?.files.find((f) => basename(f) === file);
  return name === undefined ? undefined : join(K8S, dir, name);
}

function allFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? allFiles(path) : [path];
  });
}

// ---------------------------------------------------------------------------------------------
// Kubernetes schemas

/** The kinds deploy/kubernetes uses, with their kubernetes-models class and TypeScript type. */
const MODELS: Record<string, { readonly model: new (data: never) => { validate(): void }; readonly module: string; readonly type: string }> = {
  'v1/ConfigMap': { model: ConfigMap, module: 'kubernetes-models/v1/ConfigMap', type: 'IConfigMap' },
  'v1/Secret': { model: Secret, module: 'kubernetes-models/v1/Secret', type: 'ISecret' },
  'v1/Service': { model: Service, module: 'kubernetes-models/v1/Service', type: 'IService' },
  'v1/ServiceAccount': { model: ServiceAccount, module: 'kubernetes-models/v1/ServiceAccount', type: 'IServiceAccount' },
  'apps/v1/Deployment': { model: Deployment, module: 'kubernetes-models/apps/v1/Deployment', type: 'IDeployment' },
  'apps/v1/StatefulSet': { model: StatefulSet, module: 'kubernetes-models/apps/v1/StatefulSet', type: 'IStatefulSet' },
  'policy/v1/PodDisruptionBudget': { model: PodDisruptionBudget, module: 'kubernetes-models/policy/v1/PodDisruptionBudget', type: 'IPodDisruptionBudget' },
  'networking.k8s.io/v1/NetworkPolicy': { model: NetworkPolicy, module: 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy', type: 'INetworkPolicy' },
};

const modelKey = (o: Json) => `${String(o['apiVersion'])}/${String(o['kind'])}`;
const label = (o: Json) => `${modelKey(o)} ${String((o['metadata'] as Json | undefined)?.['name'])}`;

/** The schema violations of one object ('' when valid); a kind without a model is one too. */
function schemaError(o: Json): string {
  const m = MODELS[modelKey(o)];
  if (!m) return `${label(o)}: no kubernetes-models class for this kind (add it to MODELS)`;
  try {
    new m.model(o as never).validate();
    return '';
  } catch (e) {
    return `${label(o)}: ${(e as Error).message}`;
  }
}

/**
 * Fields the Kubernetes API does not know, found by TypeScript: each object becomes an object
 * literal typed with its kubernetes-models interface, in a virtual file beside this one (so that
 * the package resolves), and the type checker's excess-property errors are the unknown fields (at
 * most one error per object: the checker stops at an object's first mismatch).
 */
function unknownFields(objects: readonly Json[]): string[] {
  const file = join(import.meta.dirname, 'kubernetes-manifests.virtual.ts');
  const kinds = [...new Set(objects.map(modelKey))].filter((k) => MODELS[k]);
  const lines = kinds.map((k) => `import type { ${MODELS[k]!.type} as T${kinds.indexOf(k)} } from '${MODELS[k]!.module}';`);
  const first = lines.length;
  for (const [i, o] of objects.entries()) lines.push(`export const o${i}: T${kinds.indexOf(modelKey(o))} = ${JSON.stringify(o)};`);
  const text = lines.join('\n');
  const options: ts.CompilerOptions = { strict: true, noEmit: true, skipLibCheck: true, types: [], target: ts.ScriptTarget.ES2022, lib: ['lib.es2022.d.ts'], module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  host.getSourceFile = (name, version, ...rest) => (name === file ? ts.createSourceFile(name, text, version) : getSourceFile(name, version, ...rest));
  host.fileExists = (name) => name === file || fileExists(name);
  const program = ts.createProgram([file], options, host);
  const source = program.getSourceFile(file)!;
  return ts.getPreEmitDiagnostics(program, source).map((d) => {
    const line = d.start === undefined ? -1 : source.getLineAndCharacterOfPosition(d.start).line;
    const o = objects[line - first];
    return `${o ? label(o) : 'imports'}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
  });
}

// ---------------------------------------------------------------------------------------------
// The Deployment, its config and its Secrets

/** What svc's pod is made of: the Deployment and the config text of the ConfigMap it mounts. */
interface SvcPod {
  readonly deployment: IDeployment;
  readonly configText: string;
}

const podSpec = (d: IDeployment) => d.spec!.template.spec!;
const svcContainer = (d: IDeployment): IContainer => podSpec(d).containers.find((c) => c.name === 'svc')!;

/**
 * The base's Deployment with the Redis example's patch applied, for the fields it sets (the test
 * below checks it sets no other): `replicas`, the pod's `affinity`, and volumes replaced by name,
 * as a strategic merge does with a list whose merge key is `name`.
 */
function withPatch(base: IDeployment, patch: IDeployment): IDeployment {
  const out = structuredClone(base);
  if (patch.spec?.replicas !== undefined) out.spec!.replicas = patch.spec.replicas;
  const spec = patch.spec?.template?.spec;
  if (spec?.affinity) podSpec(out).affinity = spec.affinity;
  for (const v of spec?.volumes ?? []) {
    const volumes = podSpec(out).volumes!;
    const at = volumes.findIndex((w) => w.name === v.name);
    if (at >= 0) volumes[at] = v;
    else volumes.push(v);
  }
  return out;
}

const baseDeployment = () => readManifests(join(K8S, BASE, 'deployment.yaml'))[0] as unknown as IDeployment;

/** A kustomization's pod from its files, without kubectl. */
function podFromFiles(dir: string): SvcPod {
  const configFile = generatorFile(dir, 'svc-config', 'config.yaml');
  expect(configFile, `${dir}: a configMapGenerator svc-config with config.yaml`).toBeDefined();
  if (dir === BASE) return { deployment: baseDeployment(), configText: readFileSync(configFile!, 'utf8') };
  const patches = (kustomization(dir).patchesStrategicMerge ?? []).map((f) => readManifests(join(K8S, dir, f))[0] as unknown as IDeployment);
  return { deployment: patches.reduce(withPatch, baseDeployment()), configText: readFileSync(configFile!, 'utf8') };
}

/** A kustomization's pod from what kubectl rendered. */
function podFromRendered(objects: readonly Json[]): SvcPod {
  const deployment = objects.find((o) => o['kind'] === 'Deployment' && (o['metadata'] as Json)['name'] === 'svc') as unknown as IDeployment;
  const volume = podSpec(deployment).volumes!.find((v) => v.configMap && svcContainer(deployment).volumeMounts!.some((m) => m.name === v.name && m.mountPath === '/etc/svc'));
  const configMap = objects.find((o) => o['kind'] === 'ConfigMap' && (o['metadata'] as Json)['name'] === volume?.configMap?.name);
  const configText = (configMap?.['data'] as Json | undefined)?.['config.yaml'];
  expect(typeof configText, 'the ConfigMap mounted at /etc/svc holds config.yaml').toBe('string');
  return { deployment, configText: configText as string };
}

interface SecretMount {
  readonly mountPath: string;
  readonly secretName: string;
  /** Item path in the volume → key in the Secret. */
  readonly items: ReadonlyMap<string, string>;
}

/** The Secret volumes a container mounts, each with the items it lists. */
function secretMounts(container: IContainer, volumes: readonly IVolume[]): SecretMount[] {
  return (container.volumeMounts ?? []).flatMap((m) => {
    const secret = volumes.find((v) => v.name === m.name)?.secret;
    if (!secret) return [];
    expect(secret.items, `the Secret volume ${m.name} lists its keys`).toBeDefined();
    return [{ mountPath: m.mountPath, secretName: secret.secretName!, items: new Map(secret.items!.map((i) => [i.path, i.key])) }];
  });
}

/** Every file location the config sets (`*_file` and the `certificates` list), by setting. */
function fileSettings(config: Json): [string, string][] {
  const out: [string, string][] = [];
  for (const [key, value] of Object.entries(config)) {
    if (SETTINGS_BY_KEY.get(key)?.kind === 'path' && typeof value === 'string') out.push([key, value]);
  }
  for (const [i, c] of ((config['certificates'] as Json[] | undefined) ?? []).entries()) {
    for (const f of ['cert', 'key']) if (typeof c[f] === 'string') out.push([`certificates[${i}].${f}`, c[f] as string]);
  }
  return out;
}

/** `host:port` (`:9090`, `0.0.0.0:8443`) → port. */
const portOf = (hostPort: unknown) => Number(/:(\d+)$/.exec(String(hostPort))?.[1]);

/** A flag's value among the container's arguments, else `fallback`. */
function flag(args: readonly string[], name: string, fallback: number): number {
  const at = args.lastIndexOf(name);
  return at < 0 ? fallback : Number(args[at + 1]);
}

/** Which of svc's health endpoints each kind of probe must use, by listener (docs/observability.md). */
const ENDPOINTS = {
  metrics: { liveness: '/healthz', readiness: '/readyz' },
  main: { liveness: PING_PATH, readiness: READY_PATH },
} as const;

/** The probes point at svc's health endpoints, on the ports of the config's listeners. */
function checkProbes(pod: SvcPod): void {
  const config = parse(pod.configText) as Json;
  const c = svcContainer(pod.deployment);
  const portByName = new Map((c.ports ?? []).map((p) => [p.name, p.containerPort]));
  const containerPort = (p: number | string) => (typeof p === 'number' ? p : portByName.get(p));
  const metricsPort = config['metrics_address'] === undefined ? undefined : portOf(config['metrics_address']);
  const mainPort = portOf(config['address'] ?? ':443');
  expect(portByName.get('https'), 'the https port is the config address').toBe(mainPort);
  if (metricsPort !== undefined) expect(portByName.get('metrics'), 'the metrics port is the config metrics_address').toBe(metricsPort);
  const probes: [string, IProbe | undefined, 'liveness' | 'readiness'][] = [
    ['livenessProbe', c.livenessProbe, 'liveness'],
    ['readinessProbe', c.readinessProbe, 'readiness'],
    ['startupProbe', c.startupProbe, 'readiness'],
  ];
  for (const [name, probe, kind] of probes) {
    const get = probe?.httpGet;
    expect(get, `${name} is an httpGet probe`).toBeDefined();
    const port = containerPort(get!.port);
    const listener = port === metricsPort ? 'metrics' : port === mainPort ? 'main' : undefined;
    expect(listener, `${name}'s port ${String(get!.port)} is one of svc's listeners`).toBeDefined();
    expect(get!.path, `${name} on the ${listener} listener`).toBe(ENDPOINTS[listener!][kind]);
    // The metrics listener here is plain HTTP; the main one HTTPS unless insecure_server.
    const tls = listener === 'metrics' ? config['metrics_certificate_file'] !== undefined || config['metrics_certificate'] !== undefined : config['insecure_server'] !== true;
    expect(get!.scheme ?? 'HTTP', `${name}'s scheme`).toBe(tls ? 'HTTPS' : 'HTTP');
  }
}

/** The grace period covers svc's shutdown delay and drain timeout, with 10 s to flush. */
function checkGrace(pod: SvcPod): void {
  const args = svcContainer(pod.deployment).args ?? [];
  const delay = flag(args, '--shutdown-delay', DEFAULT_SHUTDOWN_DELAY_MS / 1000);
  const drain = flag(args, '--drain-timeout', DEFAULT_DRAIN_TIMEOUT_MS / 1000);
  expect(podSpec(pod.deployment).terminationGracePeriodSeconds ?? 30).toBeGreaterThanOrEqual(delay + drain + 10);
}

/** Every `*_file` setting names an item of a Secret volume the container mounts; no secret is inline. */
function checkSecretFiles(pod: SvcPod): void {
  const config = parse(pod.configText) as Json;
  expect(Object.keys(config).filter((k) => isSecretPath(k)), 'secrets written in the config').toEqual([]);
  const mounts = secretMounts(svcContainer(pod.deployment), podSpec(pod.deployment).volumes ?? []);
  const files = fileSettings(config);
  expect(files.length).toBeGreaterThan(0);
  for (const [key, path] of files) {
    const m = mounts.find((s) => path.startsWith(`${s.mountPath}/`));
    expect(m, `${key}: ${path} is in a mounted Secret`).toBeDefined();
    expect([...m!.items.keys()], `${key}: ${path} is an item of the Secret ${m!.secretName}`).toContain(path.slice(m!.mountPath.length + 1));
  }
}

function checkPod(pod: SvcPod): void {
  const d = pod.deployment;
  const spec = podSpec(d);
  const c = svcContainer(d);
  // `svc run` (the image's entrypoint) with the ConfigMap's config.
  const args = c.args ?? [];
  expect(args.slice(0, 2)).toEqual(['-config', '/etc/svc/config.yaml']);
  const configMount = c.volumeMounts?.find((m) => m.mountPath === '/etc/svc');
  expect(spec.volumes?.find((v) => v.name === configMount?.name)?.configMap?.name, 'a ConfigMap at /etc/svc').toMatch(/^svc-config(-[a-z0-9]+)?$/);
  // svc's default (one worker per core) would count the node's cores, not the pod's.
  expect(args).toContain('--workers');
  // Non-root, read-only, no capabilities, no API token.
  expect(spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65532 });
  expect(c.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
  expect(c.securityContext?.capabilities?.add).toBeUndefined();
  expect(spec.automountServiceAccountToken).toBe(false);
  expect(c.resources?.requests?.['memory'] && c.resources.limits?.['memory']).toBeTruthy();
  checkProbes(pod);
  checkGrace(pod);
  checkSecretFiles(pod);
}

/** What the Redis example adds: Redis, two replicas, one Secret for the secrets every pod shares. */
function checkRedisPod(pod: SvcPod): void {
  const config = parse(pod.configText) as Json;
  expect(config['databroker_storage_type']).toBe('redis');
  expect(config['databroker_storage_connection_string_file']).toMatch(/^\//);
  expect(pod.deployment.spec?.replicas).toBeGreaterThanOrEqual(2);
  // The secrets every instance must share come from one Secret (docs/scale-out.md), and every
  // replica of the one pod template mounts it.
  const mounts = secretMounts(svcContainer(pod.deployment), podSpec(pod.deployment).volumes ?? []);
  const shared = ['shared_secret_file', 'cookie_secret_file', 'signing_key_file', 'databroker_storage_connection_string_file'].map(
    (k) => mounts.find((m) => String(config[k]).startsWith(`${m.mountPath}/`))?.secretName,
  );
  expect(shared).toEqual(['svc-secrets', 'svc-secrets', 'svc-secrets', 'svc-secrets']);
}

// ---------------------------------------------------------------------------------------------
// Test values for the Secrets, and the pod's files laid out under a temp directory

const TEST_REDIS_PASSWORD = 'test-only-redis-password';

/** Test values (TEST ONLY) for every key a Secret of deploy/kubernetes holds. */
async function testSecretValues(redisUrl: string): Promise<Record<string, string>> {
  const ca = await makeCa('svc kubernetes test CA (TEST ONLY)');
  const server = await issue(ca, { cn: 'app.example.com', dns: ['app.example.com', 'auth.example.com'] });
  const signingKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  return {
    shared_secret: `${TEST_SECRET}\n`,
    cookie_secret: `${TEST_SECRET}\n`,
    signing_key: signingKey,
    idp_client_secret: 'test-only-client-secret\n',
    metrics_basic_auth: `${Buffer.from('prometheus:test-only').toString('base64')}\n`,
    databroker_storage_connection_string: `${redisUrl}\n`,
    'tls.crt': server.certPem,
    'tls.key': server.keyPem,
    'password.conf': `requirepass ${TEST_REDIS_PASSWORD}\n`,
  };
}

/**
 * Writes a Secret or ConfigMap volume at `dir` as the kubelet does: the items in a directory of
 * their own (`..<generation>`), `..data` a link to it, and each item a link through `..data`. A
 * later generation swaps `..data` in one rename and removes the old directory, as the kubelet's
 * atomic writer does when the Secret changes: the item paths stay, the files behind them change.
 */
function writeVolume(dir: string, files: ReadonlyMap<string, string>, generation = 1): void {
  const data = `..${generation}`;
  mkdirSync(join(dir, data), { recursive: true });
  for (const [path, text] of files) {
    expect(path, 'an item path without directories').not.toContain('/');
    writeFileSync(join(dir, data, path), text, { mode: 0o440 });
  }
  if (generation === 1) {
    symlinkSync(data, join(dir, '..data'));
    for (const path of files.keys()) symlinkSync(join('..data', path), join(dir, path));
    return;
  }
  symlinkSync(data, join(dir, '..data_tmp'));
  renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
  rmSync(join(dir, `..${generation - 1}`), { recursive: true });
}

/**
 * Writes the Secret volumes `container` mounts under `root` (each at its mount path, as the kubelet
 * lays them out), and returns `text` with each Secret mount path moved under `root`.
 */
function layOut(root: string, container: IContainer, volumes: readonly IVolume[], values: Record<string, string>, text: string): string {
  let out = text;
  for (const m of secretMounts(container, volumes)) {
    const files = new Map<string, string>();
    for (const [path, key] of m.items) {
      expect(values[key], `a test value for the Secret key ${key}`).toBeDefined();
      files.set(path, values[key]!);
    }
    writeVolume(join(root, m.mountPath), files);
    out = out.replaceAll(`${m.mountPath}/`, `${join(root, m.mountPath)}/`);
  }
  return out;
}

/** Lays out the pod's Secret volumes under `root`; returns its config text with their paths there. */
function layOutPod(root: string, pod: SvcPod, values: Record<string, string>): string {
  return layOut(root, svcContainer(pod.deployment), podSpec(pod.deployment).volumes ?? [], values, pod.configText);
}

/** Writes a config as the ConfigMap volume holds it, under `root` (etc/svc/<name>); returns its path. */
function writeConfig(root: string, text: string, name = 'config.yaml'): string {
  const path = join(root, 'etc/svc', name);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  return path;
}

function compileCheck(configPath: string) {
  return spawnSync(process.execPath, [SVC, 'compile', '--check', '-config', configPath], { encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '' } });
}

/** The config with `metrics_address` on a loopback port of the test's. */
const metricsOn = (port: number) => (text: string) => {
  const out = text.replace(/^metrics_address: .*$/m, `metrics_address: 127.0.0.1:${port}`);
  expect(out).not.toBe(text);
  return out;
};

function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.setTimeout(10_000, () => req.destroy(new Error(`no answer on ${port}${path} in 10 s`)));
    req.on('error', reject);
    req.end();
  });
}

async function until<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: last ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The container's arguments without `-config FILE` (spawnSvc gives its own). */
function runArgs(container: IContainer): string[] {
  const args = [...(container.args ?? [])];
  args.splice(args.indexOf('-config'), 2);
  return args;
}

/** The probes of the Deployment, with the local port each one's container port is served on here. */
function probesOf(container: IContainer, localPorts: Record<number, number>): { name: string; path: string; port: number }[] {
  const byName = new Map((container.ports ?? []).map((p) => [p.name, p.containerPort]));
  return (['startupProbe', 'readinessProbe', 'livenessProbe'] as const).map((name) => {
    const g = container[name]!.httpGet!;
    const containerPort = typeof g.port === 'number' ? g.port : byName.get(g.port)!;
    expect(localPorts[containerPort], `${name}: a local port for container port ${containerPort}`).toBeDefined();
    return { name, path: g.path!, port: localPorts[containerPort]! };
  });
}

// ---------------------------------------------------------------------------------------------

const kubectl = which('kubectl');
const requireAll = process.env['SVC_TEST_REQUIRE_ALL'] === '1';

/** `kubectl kustomize DIR`, offline: the objects and kubectl's standard error. */
function render(dir: string): { objects: Json[]; stderr: string } {
  const r = spawnSync('kubectl', ['kustomize', join(K8S, dir)], { encoding: 'utf8', timeout: 60_000 });
  expect(r.status, r.stderr).toBe(0);
  const objects = parseAllDocuments(r.stdout, { version: '1.1' }).map((d) => d.toJS() as Json);
  return { objects, stderr: r.stderr };
}

describe('deploy/kubernetes manifests', () => {
  it('every file is a kustomization, a manifest it lists, a patch or a generator input', () => {
    const used = new Set<string>();
    for (const dir of KUSTOMIZATIONS) {
      const k = kustomization(dir);
      used.add(join(K8S, dir, 'kustomization.yaml'));
      for (const f of [...(k.resources ?? []), ...(k.patchesStrategicMerge ?? []), ...(k.configMapGenerator ?? []).flatMap((g) => g.files)]) used.add(join(K8S, dir, f));
    }
    expect(allFiles(K8S).filter((f) => !used.has(f)).map((f) => relative(K8S, f))).toEqual([]);
    expect(kustomization(REDIS_EXAMPLE).bases).toEqual(['../../base']);
  });

  it('every manifest validates against the Kubernetes schemas and names no unknown field', () => {
    const objects = KUSTOMIZATIONS.flatMap(resourceFiles).flatMap(readManifests);
    expect(objects.map(modelKey).sort()).toEqual(
      ['apps/v1/Deployment', 'apps/v1/StatefulSet', 'networking.k8s.io/v1/NetworkPolicy', 'policy/v1/PodDisruptionBudget', 'v1/Service', 'v1/Service', 'v1/Service', 'v1/ServiceAccount'].sort(),
    );
    expect(objects.map(schemaError).filter(Boolean)).toEqual([]);
    expect(unknownFields(objects)).toEqual([]);
  });

  it('the checks are real: a wrong type, a missing field, an unknown kind and a misspelt field are reported', () => {
    const d = baseDeployment() as unknown as Json;
    const wrongType = structuredClone(d);
    (wrongType['spec'] as Json)['replicas'] = 'two';
    expect(schemaError(wrongType)).toMatch(/spec\/replicas must be integer/);
    const noName = structuredClone(baseDeployment());
    delete (svcContainer(noName) as { name?: string }).name;
    expect(schemaError(noName as unknown as Json)).toMatch(/must have required property 'name'|must have required property name/);
    expect(schemaError({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x' } })).toMatch(/no kubernetes-models class/);
    const misspelt = structuredClone(baseDeployment());
    const c = svcContainer(misspelt) as unknown as Json;
    c['livenesProbe'] = c['livenessProbe'];
    delete c['livenessProbe'];
    expect(schemaError(misspelt as unknown as Json)).toBe(''); // the schema validator lets it through…
    expect(unknownFields([misspelt as unknown as Json])).toEqual([expect.stringMatching(/'"livenesProbe"' does not exist in type 'IContainer'/)]); // …the types do not
  });

  it('the kustomizations use only what kustomize 2.0 (kubectl 1.20) knows', () => {
    // Debian 12's kubernetes-client is kubectl 1.20, whose kustomize reads only these fields, wants
    // a base directory under `bases` and files under `resources`.
    const known = new Set(['apiVersion', 'kind', 'bases', 'resources', 'patchesStrategicMerge', 'configMapGenerator', 'images']);
    for (const dir of KUSTOMIZATIONS) {
      const k = kustomization(dir) as Record<string, unknown>;
      expect(Object.keys(k).filter((key) => !known.has(key)), dir).toEqual([]);
      for (const f of (k['resources'] as string[] | undefined) ?? []) expect(statSync(join(K8S, dir, f)).isFile(), `${dir}: ${f} is a file`).toBe(true);
    }
  });

  it("the image is svc's release", () => {
    const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    expect(kustomization(BASE).images).toEqual([{ name: 'svc', newTag: version }]);
    expect(svcContainer(baseDeployment()).image).toBe('svc');
  });

  it('the Redis example patches only the replicas, the affinity and the Secret volume', () => {
    const [patch] = (kustomization(REDIS_EXAMPLE).patchesStrategicMerge ?? []).map((f) => readManifests(join(K8S, REDIS_EXAMPLE, f))[0] as Json);
    const spec = patch!['spec'] as Json;
    expect(Object.keys(spec).sort()).toEqual(['replicas', 'template']);
    expect(Object.keys(spec['template'] as Json)).toEqual(['spec']);
    expect(Object.keys((spec['template'] as Json)['spec'] as Json).sort()).toEqual(['affinity', 'volumes']);
    expect((((spec['template'] as Json)['spec'] as Json)['volumes'] as IVolume[]).map((v) => v.name)).toEqual(['secrets']);
  });

  for (const dir of KUSTOMIZATIONS) {
    it(`${dir}: the Deployment fits svc (args, security, probes, grace period, Secret files)`, () => {
      checkPod(podFromFiles(dir));
    });
  }

  it('the fit checks are real: a short grace period, a probe on the wrong path or port, a file outside the Secrets fail', () => {
    const pod = podFromFiles(BASE);
    const short = structuredClone(pod);
    podSpec(short.deployment).terminationGracePeriodSeconds = 30;
    expect(() => checkGrace(short)).toThrow();
    const slowDrain = structuredClone(pod);
    svcContainer(slowDrain.deployment).args!.push('--drain-timeout', '60');
    expect(() => checkGrace(slowDrain)).toThrow();
    const livenessOnReady = structuredClone(pod);
    svcContainer(livenessOnReady.deployment).livenessProbe!.httpGet!.path = '/readyz';
    expect(() => checkProbes(livenessOnReady)).toThrow();
    const movedMetrics = { ...pod, configText: pod.configText.replace(/^metrics_address: .*$/m, 'metrics_address: :9091') };
    expect(() => checkProbes(movedMetrics)).toThrow();
    const stray = { ...pod, configText: `${pod.configText}\nclient_ca_file: /etc/ssl/ca.pem\n` };
    expect(() => checkSecretFiles(stray)).toThrow();
    const inline = { ...pod, configText: pod.configText.replace(/^cookie_secret_file: .*$/m, `cookie_secret: ${TEST_SECRET}`) };
    expect(() => checkSecretFiles(inline)).toThrow();
  });

  it('the Redis example: databroker_storage_type redis, two replicas, the shared secrets from one Secret', () => {
    checkRedisPod(podFromFiles(REDIS_EXAMPLE));
    expect(() => checkRedisPod(podFromFiles(BASE))).toThrow();
  });

  it("the Redis example's Redis: its Service, its config and password files, only svc's pods may reach it", () => {
    const objects = resourceFiles(REDIS_EXAMPLE).flatMap(readManifests);
    const redis = objects.find((o) => o['kind'] === 'StatefulSet') as unknown as IStatefulSet;
    const service = objects.find((o) => o['kind'] === 'Service' && (o['metadata'] as Json)['name'] === 'svc-redis') as Json;
    const policy = objects.find((o) => o['kind'] === 'NetworkPolicy') as unknown as INetworkPolicy;
    const conf = readFileSync(generatorFile(REDIS_EXAMPLE, 'svc-redis-config', 'redis.conf')!, 'utf8');
    const container = redis.spec!.template.spec!.containers[0]!;
    const podLabels = redis.spec!.template.metadata!.labels!;
    expect(redis.spec!.serviceName).toBe('svc-redis');
    expect((service['spec'] as Json)['selector']).toEqual(podLabels);
    expect(container.command).toEqual(['redis-server', '/etc/redis/redis.conf']);
    const port = Number(/^port (\d+)$/m.exec(conf)?.[1]);
    expect(container.ports?.[0]?.containerPort).toBe(port);
    expect(policy.spec!.podSelector.matchLabels).toEqual(podLabels);
    expect(policy.spec!.ingress?.[0]?.from?.[0]?.podSelector?.matchLabels).toEqual(baseDeployment().spec!.template.metadata!.labels);
    expect(policy.spec!.ingress?.[0]?.ports).toEqual([{ protocol: 'TCP', port }]);
    // Persistent: the append-only file in /data, on the StatefulSet's volume.
    expect(conf).toMatch(/^appendonly yes$/m);
    expect(conf).toMatch(/^dir \/data$/m);
    expect(container.volumeMounts?.find((m) => m.mountPath === '/data')?.name).toBe(redis.spec!.volumeClaimTemplates?.[0]?.metadata?.name);
    // The password comes from a Secret item the container mounts, never from the ConfigMap.
    const include = /^include (.+)$/m.exec(conf)?.[1];
    const mounts = secretMounts(container, redis.spec!.template.spec!.volumes ?? []);
    const m = mounts.find((s) => include?.startsWith(`${s.mountPath}/`));
    expect(m?.items.get(include!.slice(m.mountPath.length + 1))).toBe('password.conf');
    expect(conf).not.toMatch(/^requirepass/m);
    expect(redis.spec!.template.spec!.securityContext).toMatchObject({ runAsNonRoot: true });
    expect(container.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
  });

  for (const dir of KUSTOMIZATIONS) {
    it(`${dir}: the ConfigMap's config compiles with the Secrets' files where the Deployment mounts them`, async () => {
      const root = mkdtempSync(join(tmpdir(), 'svc-k8s-compile-'));
      try {
        const values = await testSecretValues('redis://:test-only-redis-password@svc-redis:6379/0');
        const pod = podFromFiles(dir);
        const ok = compileCheck(writeConfig(root, layOutPod(root, pod, values)));
        // Nothing but the checksum: no warning, and no setting `svc run` would refuse (its notes).
        expect(ok.stderr.trim()).toMatch(/^ok: sha256:[0-9a-f]{64}$/);
        expect(ok.status).toBe(0);
        if (dir !== BASE) return;
        // The files are what it read: without the cookie secret's, it does not compile.
        rmSync(join(root, 'var/run/secrets/svc/cookie_secret'));
        const missing = compileCheck(join(root, 'etc/svc/config.yaml'));
        expect(missing.status).toBe(1);
        expect(missing.stderr).toMatch(/cookie_secret/);
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    });
  }
});

if (!kubectl && !requireAll) console.warn('skipping "kubectl kustomize": kubectl is not on the PATH (apt-get install -y kubernetes-client)');
describe.skipIf(!kubectl && !requireAll)('kubectl kustomize (needs kubectl: the machine image has it, else apt-get install -y kubernetes-client)', () => {
  const rendered = new Map<string, { objects: Json[]; stderr: string }>();
  beforeAll(() => {
    if (!kubectl) throw new Error('SVC_TEST_REQUIRE_ALL=1 but kubectl is missing (apt-get install -y kubernetes-client)');
    for (const dir of KUSTOMIZATIONS) rendered.set(dir, render(dir));
  });

  for (const dir of KUSTOMIZATIONS) {
    it(`${dir} renders objects that validate, with no warning but the deprecations kept for kubectl 1.20`, () => {
      const { objects, stderr } = rendered.get(dir)!;
      // kustomize 5 warns about `bases` and `patchesStrategicMerge`, which kustomize 2.0 needs.
      const warnings = stderr.split('\n').filter((l) => l.trim() !== '' && !/^# Warning: '(bases|patchesStrategicMerge)' is deprecated/.test(l));
      expect(warnings).toEqual([]);
      expect(objects.map(schemaError).filter(Boolean)).toEqual([]);
      expect(unknownFields(objects)).toEqual([]);
    });

    it(`${dir}: the rendered Deployment and ConfigMap are the ones checked above`, () => {
      const pod = podFromRendered(rendered.get(dir)!.objects);
      checkPod(pod);
      const files = podFromFiles(dir);
      expect(pod.configText).toBe(files.configText);
      const fields = (p: SvcPod) => ({ replicas: p.deployment.spec?.replicas, affinity: podSpec(p.deployment).affinity, container: svcContainer(p.deployment), secrets: podSpec(p.deployment).volumes?.filter((v) => v.secret) });
      expect(fields(pod)).toEqual({ ...fields(files), container: { ...fields(files).container, image: `svc:${kustomization(BASE).images![0]!.newTag!}` } });
      if (dir === REDIS_EXAMPLE) checkRedisPod(pod);
    });
  }

  it('every object of the Redis example is in one namespace-less set: no name clashes, selectors match', () => {
    const { objects } = rendered.get(REDIS_EXAMPLE)!;
    const names = objects.map(label);
    expect(new Set(names).size).toBe(names.length);
    const pdb = objects.find((o) => o['kind'] === 'PodDisruptionBudget') as unknown as IPodDisruptionBudget;
    const deployment = objects.find((o) => o['kind'] === 'Deployment') as unknown as IDeployment;
    expect(pdb.spec?.selector?.matchLabels).toEqual(deployment.spec!.selector.matchLabels);
    for (const s of objects.filter((o) => o['kind'] === 'Service')) expect(s['metadata']).not.toHaveProperty('namespace');
  });
});

describe('svc runs with the base: the Deployment probes answer 200, a renewed certificate is served, readiness fails first on SIGTERM', () => {
  let root: string;
  let svc: SignalledSvc;
  let metricsPort: number;
  const pod = podFromFiles(BASE);
  const container = svcContainer(pod.deployment);
  let probes: { name: string; path: string; port: number }[];
  const probe = (name: string) => probes.find((p) => p.name === name)!;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'svc-k8s-run-'));
    metricsPort = await freePort();
    const configPath = writeConfig(root, metricsOn(metricsPort)(layOutPod(root, pod, await testSecretValues('redis://unused:6379/0'))));
    svc = await spawnSvc(configPath, runArgs(container));
    probes = probesOf(container, { 9090: metricsPort, 8443: svc.port });
  }, 60_000);

  afterAll(async () => {
    if (svc && svc.child.exitCode === null) svc.child.kill('SIGKILL');
    rmSync(root, { recursive: true, force: true });
  });

  it('the startup, readiness and liveness probes answer 200', async () => {
    expect(probes.map((p) => p.name)).toEqual(['startupProbe', 'readinessProbe', 'livenessProbe']);
    for (const p of probes) expect(await get(p.port, p.path), `${p.name} ${p.path}`).toMatchObject({ status: 200 });
  });

  it('a certificate renewed in its Secret (cert-manager, kubectl apply) is served without a restart', async () => {
    const servedSerial = () =>
      new Promise<string>((resolve, reject) => {
        const s = tlsConnect({ host: '127.0.0.1', port: svc.port, servername: 'app.example.com', rejectUnauthorized: false }, () => {
          resolve(s.getPeerCertificate().serialNumber.toLowerCase());
          s.end();
        });
        s.on('error', reject);
      });
    const ca = await makeCa('svc kubernetes renewal CA (TEST ONLY)');
    const renewed = await issue(ca, { cn: 'app.example.com', dns: ['app.example.com', 'auth.example.com'] });
    expect(await servedSerial()).not.toBe(renewed.serial);
    const tls = secretMounts(container, podSpec(pod.deployment).volumes ?? []).find((m) => m.secretName === 'svc-tls')!;
    writeVolume(join(root, tls.mountPath), new Map([['tls.crt', renewed.certPem], ['tls.key', renewed.keyPem]]), 2);
    expect(await until('the renewed certificate', servedSerial, (serial) => serial === renewed.serial)).toBe(renewed.serial);
    expect(await get(probe('readinessProbe').port, probe('readinessProbe').path)).toMatchObject({ status: 200 });
  });

  it('on SIGTERM readiness answers 503 while liveness stays 200 (the shutdown delay), then svc exits 0', async () => {
    svc.child.kill('SIGTERM');
    const readiness = probe('readinessProbe');
    const liveness = probe('livenessProbe');
    expect(await until('readiness to fail', () => get(readiness.port, readiness.path), (r) => r.status === 503)).toMatchObject({ body: expect.stringMatching(/draining/) });
    expect(await get(liveness.port, liveness.path)).toMatchObject({ status: 200 });
    expect(await svc.exited).toBe(0);
  });
});

describeWithCommands(['redis-server', 'redis-cli'], "two svc on the Redis example's config, with a Redis from its redis.conf", () => {
  let root: string;
  let redis: ChildProcess;
  let redisPort: number;
  const instances: { svc: SignalledSvc; metricsPort: number }[] = [];
  const pod = podFromFiles(REDIS_EXAMPLE);
  const container = svcContainer(pod.deployment);

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'svc-k8s-redis-'));
    redisPort = await freePort();
    const values = await testSecretValues(`redis://:${TEST_REDIS_PASSWORD}@127.0.0.1:${redisPort}/0`);
    // Redis as the StatefulSet runs it: the ConfigMap's redis.conf, the Secret's password.conf where
    // it is mounted; only where it listens and keeps its data are the test's.
    const objects = resourceFiles(REDIS_EXAMPLE).flatMap(readManifests);
    const statefulSet = objects.find((o) => o['kind'] === 'StatefulSet') as unknown as IStatefulSet;
    const confText = readFileSync(generatorFile(REDIS_EXAMPLE, 'svc-redis-config', 'redis.conf')!, 'utf8');
    const local = layOut(root, statefulSet.spec!.template.spec!.containers[0]!, statefulSet.spec!.template.spec!.volumes ?? [], values, confText);
    mkdirSync(join(root, 'data'));
    const edits: [RegExp, string][] = [
      [/^bind .*$/m, 'bind 127.0.0.1'],
      [/^port .*$/m, `port ${redisPort}`],
      [/^dir .*$/m, `dir ${join(root, 'data')}`],
    ];
    const conf = edits.reduce((text, [re, line]) => {
      expect(text).toMatch(re);
      return text.replace(re, line);
    }, local);
    writeFileSync(join(root, 'redis.conf'), conf);
    redis = spawn('redis-server', [join(root, 'redis.conf')], { stdio: 'ignore' });
    await until('redis-server', async () => cli(redisPort, ['PING'], TEST_REDIS_PASSWORD), (out) => out.includes('PONG'));
    // The password of password.conf is required.
    expect(cli(redisPort, ['PING'])).toMatch(/NOAUTH/);
    // Two instances of one pod template: the same config and the same Secret files; only the
    // metrics port differs, since both run on this machine.
    const configText = layOutPod(root, pod, values);
    for (const i of [0, 1]) {
      const metricsPort = await freePort();
      const configPath = writeConfig(root, metricsOn(metricsPort)(configText), `config-${i}.yaml`);
      instances.push({ svc: await spawnSvc(configPath, runArgs(container)), metricsPort });
    }
  }, 120_000);

  afterAll(async () => {
    await Promise.all(
      instances.map(async ({ svc }) => {
        if (svc.child.exitCode !== null) return;
        svc.child.kill('SIGTERM');
        await svc.exited;
      }),
    );
    redis?.kill('SIGKILL');
    rmSync(root, { recursive: true, force: true });
  }, 60_000);

  it('both answer the Deployment probes with 200, reach Redis, and share it', async () => {
    for (const { svc, metricsPort } of instances) {
      for (const p of probesOf(container, { 9090: metricsPort, 8443: svc.port })) expect(await get(p.port, p.path), `${p.name} ${p.path}`).toMatchObject({ status: 200 });
      await until('databroker: reachable', () => get(metricsPort, '/healthz'), (r) => r.body.includes('databroker: reachable'));
    }
    // One identity-manager lease for both: they see each other's keys (same Redis, same secret).
    await until('the lease key', async () => cli(redisPort, ['--scan', '--pattern', 'svc:*:l:*'], TEST_REDIS_PASSWORD), (out) => out.trim() !== '');
    expect(cli(redisPort, ['--scan', '--pattern', 'svc:*:l:*'], TEST_REDIS_PASSWORD).trim().split('\n')).toHaveLength(1);
  }, 60_000);
});
