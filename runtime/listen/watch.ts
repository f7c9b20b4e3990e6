/**
 * Reload of the TLS files a plan refers to (spec §1.5: "TLS files referenced by the configuration
 * are reloaded automatically when they change"): certificates, keys, client CAs and CRLs given as
 * files. On a change the whole TLS material is built again and swapped in one assignment
 * (build-fully-then-swap, STYLE.md); material that fails to build leaves the old one in service and
 * is reported. Handshakes read `current()` each time, so new connections get the new material and
 * open connections keep theirs.
 *
 * Changes are debounced: a certificate and its key are usually replaced one after the other, and a
 * build between the two writes would fail on the mismatch (it would be reported, then superseded).
 */
import { resolve } from 'node:path';
import type tls from 'node:tls';
import { watch, type FSWatcher } from 'chokidar';
import type { PlanBody } from '../../compiler/plan/types.ts';
import { defaultSecureContext, loadTlsMaterial, type TlsMaterial, type TlsMaterialSource } from './material.ts';
import { filesOf } from './pem.ts';

/** Every file the TLS material of `body` is read from, deduplicated, in plan order. */
export function tlsFilesOf(body: PlanBody): string[] {
  const t = body.settings.tls;
  const files = [
    ...t.certificates.flatMap((c) => [...filesOf(c.cert), ...filesOf(c.key)]),
    ...filesOf(t.clientCa),
    ...filesOf(t.clientCrl),
    ...body.routes.flatMap((r) => filesOf(r.tls.downstreamClientCa)),
  ];
  return [...new Set(files)];
}

export interface TlsWatchOptions {
  /** A rebuild failed; the previous material stays in service. */
  readonly onError: (error: Error) => void;
  /** New material is in service. */
  readonly onSwap?: (material: TlsMaterial) => void;
  /**
   * TLS servers created with `secureContextOptions`: their default context (clients without SNI)
   * is replaced on each swap with `setSecureContext`.
   */
  readonly servers?: readonly tls.Server[];
  /** Quiet period after the last change before rebuilding; default 200 ms. */
  readonly debounceMs?: number;
}

/** The TLS material in service for one plan, kept current as its files change. */
export class TlsFileWatcher implements TlsMaterialSource {
  #current: TlsMaterial;
  readonly #body: PlanBody;
  readonly #options: TlsWatchOptions;
  readonly #watcher: FSWatcher | null;
  readonly #ready: Promise<void>;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<boolean> | null = null;
  #again = false;
  #closed = false;

  /** Watches the TLS files of `body`, starting from `initial` (built from the same body). */
  constructor(body: PlanBody, initial: TlsMaterial, options: TlsWatchOptions) {
    this.#body = body;
    this.#current = initial;
    this.#options = options;
    const files = tlsFilesOf(body).map((f) => resolve(f));
    if (files.length === 0) {
      this.#watcher = null;
      this.#ready = Promise.resolve();
      return;
    }
    const w = watch(files, { ignoreInitial: true, persistent: true });
    this.#watcher = w;
    this.#ready = new Promise((res) => w.once('ready', () => res()));
    const changed = (): void => this.#schedule();
    w.on('add', changed).on('change', changed).on('unlink', changed);
    w.on('error', (e) => options.onError(e instanceof Error ? e : new Error(String(e))));
  }

  /** The material for a new handshake or request. */
  current(): TlsMaterial {
    return this.#current;
  }

  /** Resolves once the files are being watched. */
  ready(): Promise<void> {
    return this.#ready;
  }

  /**
   * Builds the material from the files as they are now and swaps it in; resolves true when
   * swapped, false when the build failed (reported through `onError`). Calls during a rebuild
   * coalesce into one more rebuild after it.
   */
  reload(): Promise<boolean> {
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    const run = async (): Promise<boolean> => {
      let ok = false;
      do {
        this.#again = false;
        ok = await this.#rebuild();
      } while (this.#again && !this.#closed);
      return ok;
    };
    this.#running = run().finally(() => {
      this.#running = null;
    });
    return this.#running;
  }

  /** Stops watching; the current material stays readable. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#watcher?.close();
    await this.#running;
  }

  #schedule(): void {
    if (this.#closed) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.reload();
    }, this.#options.debounceMs ?? 200);
  }

  async #rebuild(): Promise<boolean> {
    let next: TlsMaterial;
    try {
      next = await loadTlsMaterial(this.#body, { mode: 'reload', previous: this.#current });
    } catch (e) {
      this.#options.onError(e instanceof Error ? e : new Error(String(e)));
      return false;
    }
    if (this.#closed) return false;
    // INVARIANT (build-then-swap): `next` is complete; this one assignment publishes it.
    this.#current = next;
    const defaults = defaultSecureContext(next);
    for (const s of this.#options.servers ?? []) s.setSecureContext(defaults);
    this.#options.onSwap?.(next);
    return true;
  }
}

/** Starts a `TlsFileWatcher`: `watchTlsFiles(body, await loadTlsMaterial(body), {...})`. */
export function watchTlsFiles(body: PlanBody, initial: TlsMaterial, options: TlsWatchOptions): TlsFileWatcher {
  return new TlsFileWatcher(body, initial, options);
}
