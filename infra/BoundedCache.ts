/**
 * A least-recently-used cache bounded by total weight (entries, or bytes): the oldest entries go
 * first when a new one would pass the bound, and entries may also expire. Every process-local
 * cache that a caller can grow (key lookups, delivery envelopes) is one of these, so no input can
 * make one unbounded, and filling one never throws away the entries in use most recently.
 */
export interface BoundedCacheOptions<V> {
  /** The most total weight kept. */
  readonly maxWeight: number
  /** An entry's weight: 1 by default (a bound on the count); bytes for a bound on memory. */
  readonly weigh?: ((value: V) => number) | undefined
  /** Milliseconds an entry lives; forever by default. */
  readonly ttlMs?: number | undefined
}

interface Entry<V> {
  readonly value: V
  readonly weight: number
  readonly expires: number
}

export class BoundedCache<K, V> {
  private readonly entries = new Map<K, Entry<V>>()
  private weight = 0
  private readonly options: BoundedCacheOptions<V>

  constructor(options: BoundedCacheOptions<V>) {
    this.options = options
  }

  get size(): number {
    return this.entries.size
  }

  get totalWeight(): number {
    return this.weight
  }

  get(key: K, now: number = Date.now()): V | undefined {
    const entry = this.entries.get(key)
    if (entry === undefined) return undefined
    this.entries.delete(key)
    if (entry.expires <= now) {
      this.weight -= entry.weight
      return undefined
    }
    // Re-inserted: the Map's order is the recency order.
    this.entries.set(key, entry)
    return entry.value
  }

  set(key: K, value: V, now: number = Date.now()): void {
    this.delete(key)
    const weight = this.options.weigh?.(value) ?? 1
    // An entry heavier than the whole cache is not kept (and evicts nothing).
    if (weight > this.options.maxWeight) return
    this.entries.set(key, { value, weight, expires: this.options.ttlMs === undefined ? Infinity : now + this.options.ttlMs })
    this.weight += weight
    for (const [oldest, entry] of this.entries) {
      if (this.weight <= this.options.maxWeight) break
      this.entries.delete(oldest)
      this.weight -= entry.weight
    }
  }

  delete(key: K): void {
    const entry = this.entries.get(key)
    if (entry === undefined) return
    this.entries.delete(key)
    this.weight -= entry.weight
  }

  clear(): void {
    this.entries.clear()
    this.weight = 0
  }
}
