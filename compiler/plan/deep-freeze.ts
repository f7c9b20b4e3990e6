/**
 * Freezes an object graph deeply (every own key, symbols included), so a sealed plan, a loaded plan
 * or a stored session record can never be changed by whoever holds it (docs/architecture.md §2 invariant 6).
 * Part of the plan contract (compiler/plan/), so the runtime uses the same one.
 */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Reflect.ownKeys(value)) deepFreeze((value as Record<PropertyKey, unknown>)[key]);
  }
  return value;
}
