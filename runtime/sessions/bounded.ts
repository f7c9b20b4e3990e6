/**
 * Runs `task` for every item of `items` with at most `limit` tasks in flight (the identity manager's
 * bound on concurrent requests to the provider). Stops taking items once `signal` aborts; tasks
 * must not reject (a rejection is passed to `onError` and the others go on). Resolves when every
 * started task has ended.
 */
export async function forEachBounded<T>(items: AsyncIterable<T>, limit: number, task: (item: T) => Promise<void>, signal: AbortSignal, onError: (e: unknown) => void): Promise<void> {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError('limit must be a positive integer');
  const iterator = items[Symbol.asyncIterator]();
  let done = false;
  const worker = async (): Promise<void> => {
    while (!done && !signal.aborted) {
      // Async iterators are not safe for concurrent next(): the workers take turns (JS is single-threaded
      // between awaits, and each worker awaits its own next() before calling again).
      const next = await pull();
      if (next.done) {
        done = true;
        return;
      }
      try {
        await task(next.value);
      } catch (e) {
        onError(e);
      }
    }
  };
  let queue: Promise<unknown> = Promise.resolve();
  const pull = (): Promise<IteratorResult<T>> => {
    const p = queue.then(() => (done ? ({ done: true, value: undefined } as IteratorResult<T>) : iterator.next()));
    queue = p.catch(() => undefined);
    return p;
  };
  try {
    await Promise.all(Array.from({ length: limit }, worker));
  } finally {
    if (!done) await iterator.return?.().catch(() => undefined);
  }
}
