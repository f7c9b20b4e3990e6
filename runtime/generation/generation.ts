/**
 * The generations `svc run` serves (docs/architecture.md §5 "Generations"): the parts a request reads, the
 * provisioners that build them, and the store holding the current one. Request code reads
 * `gen.index` (routes), `gen.auth` (authentication state), `gen.tls` (the listener's certificates
 * and client-certificate checks; null on a plain-HTTP listener) and `gen.forward` (pools, upstream
 * choice), all of the one generation it acquired.
 *
 * What a reload changes is the list in `provisioners` below, read top to bottom: the route index
 * (provision.ts), authentication, TLS material (and, after the swap, the listener's default
 * certificate for clients without SNI), forwarding, the names autocert manages (after the swap), and
 * the candidate plan of `svc run --shadow` (shadow-provisioner.ts),
 * after the parts every process has, the cluster primary too (`processProvisioners`): log settings,
 * tracing, the notices of a new plan, and the metrics listener's material. What a part changes
 * outside generations it changes in its after-swap hook (provision.ts `afterSwap`).
 */
import type { PlanBody, PlanEnvelope, PlanSettings } from '../../compiler/plan/types.ts';
import { buildAuthState, type AuthState } from '../authn/auth-state.ts';
import { ephemeralSigningKey, publicKeyBase64, type SigningKey } from '../authn/signing-key.ts';
import { webAuthnLibrary } from '../authn/webauthn.ts';
import { planReadsDevice } from '../plan/reads-device.ts';
import type { ForwardState } from './forward-provisioner.ts';
import type { UpstreamObserver } from '../observe/metrics/upstreams.ts';
import type { AutocertManager } from '../tls/acme/manager.ts';
import type { SecureContextOptions } from 'node:tls';
import { defaultSecureContext, listenerTls, loadTlsMaterial, type ListenerTls, type TlsMaterial } from '../tls/material.ts';
import { readPemSource } from '../tls/pem.ts';
import { readMetricsMaterial, type MetricsMaterial } from '../observe/metrics/listener.ts';
import { afterSwap, cleanupGeneration, provisionGeneration, type Generation, type Provisioner, type Provisioners } from './provision.ts';
import { PlanStore } from './plan-store.ts';
import { forwardProvisioner } from './forward-provisioner.ts';
import { shadowProvisioner, type ShadowSource } from './shadow-provisioner.ts';
import type { ShadowPlan } from '../request/shadow.ts';
import type { ShadowObserver } from '../observe/metrics/shadow.ts';

/** What lives outside generations and follows the plan in service (told in after-swap hooks). */
export interface ProcessTargets {
  /** svc's log lines: levels, `service` label, format (runtime/observe/log/run-log.ts `RunLog`). */
  readonly logSettings?: { apply(settings: Pick<PlanSettings, 'logging' | 'mode'>): void } | undefined;
  /**
   * The tracer of the plan served (runtime/observe/trace/tracing.ts `TracingSwitch`): `prepare` loads
   * what a plan's tracing needs while its generation is built (OpenTelemetry, only when the plan
   * traces), `apply` follows the plan once it is swapped in.
   */
  readonly tracing?: { prepare(settings: PlanSettings): Promise<void>; apply(settings: PlanSettings): void } | undefined;
  /** Told each new plan that goes into service (svc run: what its settings do only partly, said once). */
  readonly notices?: ((plan: PlanEnvelope) => void) | undefined;
  /**
   * The metrics listener of a process that runs one (the loading process: not a cluster worker),
   * once it listens: the material of each generation swapped in is handed to it. Absent: the
   * process runs no metrics listener and reads no metrics material.
   */
  readonly metricsListener?: (() => { use(material: MetricsMaterial): void } | undefined) | undefined;
}

/** The parts every process's generations have, the cluster primary's too. */
export interface ProcessParts {
  /** The plan whose log settings apply. */
  readonly logSettings: PlanEnvelope;
  /** The plan whose tracing settings apply. */
  readonly tracing: PlanEnvelope;
  /** The plan the notices were told. */
  readonly notices: PlanEnvelope;
  /** The metrics listener's credential and TLS (null without a metrics listener in this process). */
  readonly metricsMaterial: MetricsMaterial | null;
}

/**
 * The provisioners of the parts every process has: each takes the plan (kept on a renewal, which
 * changes no setting) and applies it to its target after the swap.
 */
export function processProvisioners(targets: ProcessTargets): Provisioners<ProcessParts> {
  const follow = (name: string, apply: ((plan: PlanEnvelope) => void) | undefined, prepare?: (plan: PlanEnvelope) => Promise<void>): Provisioner<PlanEnvelope> => ({
    name,
    provision: async (plan, _index, previous, context) => {
      if (context.renewal && previous) return previous;
      // What the part needs loaded before it applies (a library the plan's feature uses): a
      // failure refuses the plan here, before the swap.
      await prepare?.(plan);
      return plan;
    },
    cleanup: () => undefined,
    afterSwap: (plan) => apply?.(plan),
  });
  const listener = targets.metricsListener;
  const metricsMaterial: Provisioner<MetricsMaterial | null> = {
    name: 'metrics material',
    // A renewal reads rotated key files as they now are (runtime/tls/pem.ts), and keeps the part in
    // service when they are what it holds already, so an unchanged renewal swaps nothing.
    provision: (plan, _index, previous, context) => {
      if (listener === undefined || plan.body.settings.metrics.address === null) return null;
      const material = readMetricsMaterial(plan.body.settings.metrics, context.renewal ? 'reload' : 'load');
      return previous && JSON.stringify(previous) === JSON.stringify(material) ? previous : material;
    },
    cleanup: () => undefined,
    // The first generation's material is the one the listener starts with (it listens later).
    afterSwap: (material) => {
      if (material) listener?.()?.use(material);
    },
  };
  return {
    logSettings: follow('log settings', targets.logSettings && ((p) => targets.logSettings!.apply(p.body.settings))),
    tracing: follow(
      'tracing',
      targets.tracing && ((p) => targets.tracing!.apply(p.body.settings)),
      targets.tracing && ((p) => targets.tracing!.prepare(p.body.settings)),
    ),
    notices: follow('notices', targets.notices),
    metricsMaterial,
  };
}

/** The parts of a served generation, in the order they are provisioned. */
export interface Parts extends ProcessParts {
  /** Secrets, keys, identity provider and signer (runtime/authn/auth-state.ts). */
  readonly auth: AuthState;
  /** The listener's TLS material; null with `insecure_server`. */
  readonly tls: ListenerTls | null;
  /** Pools and upstream sets (runtime/generation/forward-provisioner.ts). */
  readonly forward: ForwardState;
  /** The plan whose route hosts autocert manages (runtime/tls/acme/names.ts); null without autocert. */
  readonly autocertNames: PlanBody | null;
  /** The candidate plan of `svc run --shadow` (shadow-provisioner.ts); null without one. */
  readonly shadow: ShadowPlan | null;
}

export type ServedGeneration = Generation<Parts>;
export type ServedStore = PlanStore<Parts>;

export interface PartsOptions extends ProcessTargets {
  /** `http` with `insecure_server`: no TLS material, and http origins allowed with insecure cookies. */
  readonly scheme: 'http' | 'https';
  /** The process's ephemeral signing key, for plans without `signing_key`. */
  readonly ephemeralKey: () => SigningKey;
  readonly log?: (entry: Record<string, unknown>) => void;
  /** Told how each upstream exchange ended (metrics). */
  readonly upstreamObserver?: UpstreamObserver;
  /**
   * The process's autocert manager, when the first plan sets `autocert` (runtime/tls/acme/): the
   * source of managed certificates, told the names of each plan swapped in.
   */
  readonly autocert?: AutocertManager;
  /** The candidate plan of `svc run --shadow`, loaded with every generation (shadow-provisioner.ts). */
  readonly shadow?: ShadowSource | undefined;
  /** Told the shadow plan's loads and differing decisions (metrics). */
  readonly shadowObserver?: ShadowObserver | undefined;
}

/** The HTTPS listener, as the after-swap hook of the TLS part sees it. */
export interface DefaultCertificateTarget {
  setSecureContext(options: SecureContextOptions): void;
}

/**
 * The provisioners of a served generation, in order: authentication, TLS material, forwarding,
 * autocert names. `listener` is the HTTPS listener once it listens (`Generations.serveDefaultCertificate`).
 */
export function provisioners(options: PartsOptions, listener: () => DefaultCertificateTarget | undefined = () => undefined): Provisioners<Parts> {
  const auth: Provisioner<AuthState> = {
    name: 'auth',
    provision: async (plan, _index, previous, context) => {
      if (context.renewal && previous) return previous;
      // A plan that reads `device` needs the ceremonies' library: loaded here, so a broken
      // installation refuses that plan before the swap rather than failing a user's ceremony.
      if (planReadsDevice(plan.body)) await webAuthnLibrary();
      return buildAuthState(plan.body, options.scheme, previous, options.ephemeralKey, process.env, options.log);
    },
    cleanup: () => undefined,
  };
  const tls: Provisioner<ListenerTls | null> = {
    name: 'tls',
    // A renewal reads rotated files as they now are (a plan file served as is while its
    // certificates are renewed); a new plan's key files must match their fingerprints (pem.ts).
    // A renewal that reads what is in service already keeps it, so the generation is kept too.
    provision: async (plan, _index, previous, context) => {
      if (options.scheme === 'http') return null;
      const material = await loadTlsMaterial(plan.body, {
        mode: context.renewal ? 'reload' : 'load',
        ...(previous ? { previous: previous.material } : {}),
        ...(options.autocert ? { managed: options.autocert } : {}),
        // A route host the certificates as read no longer cover (a rotated file): a warn line.
        ...(options.log ? { warn: options.log } : {}),
      });
      const text = materialText(plan.body, material);
      if (context.renewal && previous && text === texts.get(previous.material)) return previous;
      return listenerTls(material);
    },
    // Secure contexts are garbage-collected; generated certificates are shared through `selfSigned`.
    cleanup: () => undefined,
    // Clients without SNI get the default certificate of the generation in service.
    afterSwap: (part) => {
      if (part) listener()?.setSecureContext(defaultSecureContext(part.material));
    },
  };
  const autocertNames: Provisioner<PlanBody | null> = {
    name: 'autocert',
    provision: (plan, _index, previous, context) => (!options.autocert ? null : context.renewal && previous ? previous : plan.body),
    cleanup: () => undefined,
    // The manager outlives generations (certificates outlive plans); each plan swapped in says which names it keeps.
    afterSwap: (body, replaced) => {
      const manager = options.autocert;
      if (!body || !manager) return;
      // The first plan's names were given when the manager was made (runtime/tls/acme/start.ts).
      if (replaced === undefined) options.log?.({ level: 'info', msg: 'autocert: managing certificates', names: manager.names, dir: body.settings.autocert.dir });
      else manager.update(body);
    },
  };
  const forward = forwardProvisioner({ onUpstreamEvent: (route, event) => options.log?.({ msg: 'upstream', route, event }), ...(options.upstreamObserver ? { observer: options.upstreamObserver } : {}) });
  const shadow = shadowProvisioner(options.shadow, options.shadowObserver, options.log);
  return { ...processProvisioners(options), auth, tls, forward, autocertNames, shadow };
}

/**
 * What a listener's TLS material was read from, as one string to compare, kept with the material
 * (call it as soon as the material is loaded): every certificate and key pair in plan order, the
 * client CAs and the CRL.
 */
function materialText(body: PlanBody, material: TlsMaterial): string {
  let text = texts.get(material);
  if (text === undefined) {
    const tls = body.settings.tls;
    const sources = [tls.clientCa, tls.clientCrl, ...body.routes.map((r) => r.tls.downstreamClientCa)];
    text = JSON.stringify([material.certificates.entries.map((e) => [e.certPem, e.keyPem]), sources.map((s) => (s ? readPemSource(s, 'tls') : null))]);
    texts.set(material, text);
  }
  return text;
}
const texts = new WeakMap<TlsMaterial, string>();

/**
 * The ephemeral signing key of a process that makes its own: generated on first use and its public
 * half logged (it is not published: docs/authentication.md "Identity for upstreams"). A cluster worker uses the primary's instead.
 */
export function lazyEphemeralKey(log?: (entry: Record<string, unknown>) => void): () => SigningKey {
  let key: SigningKey | undefined;
  return () => {
    if (!key) {
      key = ephemeralSigningKey();
      log?.({ msg: 'no signing_key: signing identity assertions with an ephemeral key', alg: key.alg, kid: key.kid, publicKey: publicKeyBase64(key) });
    }
    return key;
  };
}

/** A built generation waiting for the decision: swapped in, or dropped. */
export interface Prepared {
  commit(): void;
  abort(): void;
  /**
   * False when the plan and everything it reads are what is in service: `commit` keeps the
   * generation (and its number). Undefined when not known (the cluster primary: its workers build).
   */
  readonly changed?: boolean;
}

/** The generations of this process: the store, and how the next generation is built and swapped. */
export interface Generations<P extends object = Parts> {
  readonly store: PlanStore<P>;
  /** The plan in service. */
  plan(): PlanEnvelope;
  /** Builds the generation of `plan` (throws `PlanRefusedError`); nothing is served from it until `commit`. */
  prepare(plan: PlanEnvelope): Promise<Prepared>;
  /** Cleans up the current generation (shutdown, after the listeners closed). */
  close(): Promise<void>;
}

/** The generations of a process that serves requests. */
export interface ServedGenerations extends Generations<Parts> {
  /** The HTTPS listener whose default certificate follows the generation in service (from now on). */
  serveDefaultCertificate(listener: DefaultCertificateTarget): void;
}

/** Builds the first generation of `plan` and the store serving it. Throws `PlanRefusedError`. */
export async function startGenerations(plan: PlanEnvelope, options: PartsOptions): Promise<ServedGenerations> {
  let listener: DefaultCertificateTarget | undefined;
  const generations = await generationsOf(plan, provisioners(options, () => listener), options.log);
  return { ...generations, serveDefaultCertificate: (l) => void (listener = l) };
}

/**
 * The generations of the cluster primary, which serves no request: the process parts only (log
 * settings, tracing, notices); its workers build the rest (runtime/process/cluster.ts).
 */
export function startProcessGenerations(plan: PlanEnvelope, targets: ProcessTargets & { readonly log?: ((entry: Record<string, unknown>) => void) | undefined }): Promise<Generations<ProcessParts>> {
  return generationsOf(plan, processProvisioners(targets), targets.log);
}

async function generationsOf<P extends object>(plan: PlanEnvelope, list: Provisioners<P>, log: ((entry: Record<string, unknown>) => void) | undefined): Promise<Generations<P>> {
  const onError = (part: string, e: unknown) => log?.({ msg: 'generation cleanup failed', part, error: (e as Error).message });
  const onSwapError = (part: string, e: unknown) => log?.({ level: 'error', msg: 'applying a swapped generation failed', part, error: (e as Error).message });
  const store = new PlanStore<P>(await provisionGeneration(list, plan, undefined), {
    retire: (g, next) => void cleanupGeneration(list, g, next, onError),
  });
  return {
    store,
    plan: () => store.current.plan,
    prepare: async (next) => {
      const base = store.current;
      const g = await provisionGeneration(list, next, base);
      // A renewal that found nothing new (the same files, or a plain-HTTP listener) swaps nothing:
      // the generation in service, and its number, stay.
      if (g.index === base.index && (Object.keys(list) as (keyof P)[]).every((k) => g[k] === base[k])) return { commit: () => undefined, abort: () => undefined, changed: false };
      let settled = false;
      return {
        changed: true,
        commit: () => {
          if (settled) return;
          settled = true;
          // INVARIANT (build-fully-then-swap): a generation is prepared against the one in service;
          // reloads run one at a time (runtime/generation/reload.ts), so nothing was swapped in between.
          if (store.current !== base) throw new Error('bug: a generation was swapped in while another was prepared');
          store.swap(g);
          afterSwap(list, g, base, onSwapError);
        },
        abort: () => {
          if (settled) return;
          settled = true;
          void cleanupGeneration(list, g, store.current, onError);
        },
      };
    },
    close: () => cleanupGeneration(list, store.current, undefined, onError),
  };
}
