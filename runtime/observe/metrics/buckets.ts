/** Histogram buckets shared by the duration and size metrics (docs/observability.md "Metric reference": `_ms` and `_bytes`). */

/** Milliseconds: 1 ms to 60 s. */
export const DURATION_MS_BUCKETS: readonly number[] = [1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000];

/** Bytes: 64 B to 64 MiB, by factors of 4. */
export const SIZE_BYTES_BUCKETS: readonly number[] = Array.from({ length: 11 }, (_, i) => 64 * 4 ** i);
