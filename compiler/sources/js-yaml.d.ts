/**
 * The part of js-yaml 4's API the YAML fast path uses (the package ships no types). `load` calls
 * `listener` when it starts (`open`) and finishes (`close`) reading each node, with its parser
 * state; the fields below are read at those moments only.
 */
declare module 'js-yaml' {
  export interface LoaderState {
    /** Offset in the input (the input plus a final `\n` when it had none). */
    readonly position: number;
    /** At `close`: `'scalar'`, `'sequence'`, `'mapping'`, or null when nothing was read. */
    readonly kind: string | null;
    /** At `close`: the value read (a string for every scalar under the failsafe schema). */
    readonly result: unknown;
    /** At `close`: the node's tag; `'?'` marks a plain scalar left unresolved. */
    readonly tag: string | null;
    /** At `close`: the node's anchor name, if it has one. */
    readonly anchor: string | null;
  }

  export interface LoadOptions {
    schema?: Schema;
    json?: boolean;
    maxDepth?: number;
    onWarning?: (error: Error) => void;
    listener?: (event: 'open' | 'close', state: LoaderState) => void;
  }

  export class Schema {
    private constructor();
  }

  export const FAILSAFE_SCHEMA: Schema;
  export function load(text: string, options?: LoadOptions): unknown;
}
