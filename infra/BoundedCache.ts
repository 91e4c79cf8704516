/**
 * A least-recently-used cache bounded by total weight (entries, or bytes): the oldest entries go
 * first when a new one would pass the bound, and entries may also expire. Every process-local
 * cache that a caller can grow (key lookups, delivery envelopes) is one of these, so no input can
 * make one unbounded, and filling one never throws away the entries in use most recently.
 *
 * Shared between tenants (`groupOf`, a project say), the room is taken from the heaviest group:
 * when the bound is passed, the least recently used entry of the group holding the most weight
 * goes, so one group filling the cache evicts its own entries and never those of a group that
 * holds less than it does.
 */
export interface BoundedCacheOptions<V> {
  /** The most total weight kept. */
  readonly maxWeight: number
  /** An entry's weight: 1 by default (a bound on the count); bytes for a bound on memory. */
  readonly weigh?: ((value: V) => number) | undefined
  /** Milliseconds an entry lives; forever by default. */
  readonly ttlMs?: number | undefined
  /** The tenant an entry belongs to; without it the whole cache is one group. */
  readonly groupOf?: ((value: V) => string) | undefined
}

interface Entry<V> {
  readonly value: V
  readonly weight: number
  readonly expires: number
  /** Its tenant's bookkeeping; none in a cache without `groupOf` (the hot lookups stay one Map). */
  readonly group: Group<unknown> | undefined
}

/** A tenant's entries in recency order (the Map's order), and their weight. */
interface Group<K> {
  readonly name: string
  readonly keys: Map<K, true>
  weight: number
}

export class BoundedCache<K, V> {
  private readonly entries = new Map<K, Entry<V>>()
  private readonly groups = new Map<string, Group<K>>()
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

  /** The weight one group holds (0 when it holds nothing). */
  groupWeight(group: string): number {
    return this.groups.get(group)?.weight ?? 0
  }

  get(key: K, now: number = Date.now()): V | undefined {
    const entry = this.entries.get(key)
    if (entry === undefined) return undefined
    if (entry.expires <= now) {
      this.delete(key)
      return undefined
    }
    // Re-inserted: the Maps' order is the recency order.
    this.entries.delete(key)
    this.entries.set(key, entry)
    const keys = (entry.group as Group<K> | undefined)?.keys
    keys?.delete(key)
    keys?.set(key, true)
    return entry.value
  }

  set(key: K, value: V, now: number = Date.now()): void {
    this.delete(key)
    const weight = this.options.weigh?.(value) ?? 1
    // An entry heavier than the whole cache is not kept (and evicts nothing).
    if (weight > this.options.maxWeight) return
    const group = this.groupFor(value)
    this.entries.set(key, { value, weight, expires: this.options.ttlMs === undefined ? Infinity : now + this.options.ttlMs, group })
    group?.keys.set(key, true)
    if (group !== undefined) group.weight += weight
    this.weight += weight
    while (this.weight > this.options.maxWeight) this.evictOldest(group === undefined ? this.entries : this.heaviest().keys)
  }

  delete(key: K): void {
    const entry = this.entries.get(key)
    if (entry === undefined) return
    this.entries.delete(key)
    this.weight -= entry.weight
    const group = entry.group as Group<K> | undefined
    if (group === undefined) return
    group.keys.delete(key)
    group.weight -= entry.weight
    if (group.keys.size === 0) this.groups.delete(group.name)
  }

  clear(): void {
    this.entries.clear()
    this.groups.clear()
    this.weight = 0
  }

  private groupFor(value: V): Group<K> | undefined {
    if (this.options.groupOf === undefined) return undefined
    const name = this.options.groupOf(value)
    let group = this.groups.get(name)
    if (group === undefined) {
      group = { name, keys: new Map(), weight: 0 }
      this.groups.set(name, group)
    }
    return group
  }

  private heaviest(): Group<K> {
    let heaviest: Group<K> | undefined
    for (const group of this.groups.values()) if (heaviest === undefined || group.weight > heaviest.weight) heaviest = group
    // Called only while the cache is over its bound, so some group holds weight.
    return heaviest!
  }

  /** Deletes the first key of `keys`, in recency order the least recently used. */
  private evictOldest(keys: Map<K, unknown>): void {
    for (const key of keys.keys()) return this.delete(key)
  }
}
