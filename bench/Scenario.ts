/**
 * What a benchmark scenario is: a name, optional service settings it needs, and a run that
 * measures against every running service target and returns table rows. Scenarios are listed
 * in `scenarios/index.ts`.
 */
import type { LoadResult, LoadSpec } from "./load.ts"

export interface Target {
  /** `memory` or `postgres`. */
  readonly name: string
  readonly baseUrl: string
  /** An unpinned key of project `proj_bench`. */
  readonly key: string
}

export interface BenchContext {
  readonly seconds: number
  readonly warmupSeconds: number
  readonly connections: number
  readonly targets: ReadonlyArray<Target>
  /** The raw `node:http` baseline (answers any path with a small JSON body). */
  readonly rawBaseUrl: string
  /** Runs one measurement with the context's duration and connections unless overridden. */
  readonly load: (spec: Omit<LoadSpec, "seconds" | "warmupSeconds" | "connections"> & Partial<LoadSpec>) => Promise<LoadResult>
}

export interface Measurement {
  readonly scenario: string
  readonly target: string
  readonly throughput: number
  readonly unit: "req/s" | "MiB/s"
  readonly p50Ms: number
  readonly p99Ms: number
  readonly requests: number
  readonly failures: number
  readonly note?: string
}

export interface Scenario {
  readonly name: string
  /** Service variables the scenario needs (merged into every target's environment). */
  readonly env?: Readonly<Record<string, string>>
  readonly run: (context: BenchContext) => Promise<ReadonlyArray<Measurement>>
}

export const row = (scenario: string, target: string, result: LoadResult, note?: string): Measurement => {
  const kinds = Object.entries(result.failureKinds).map(([kind, n]) => `${kind}×${n}`).join(" ")
  const text = [note, kinds === "" ? undefined : `failures: ${kinds}`].filter((t) => t !== undefined).join("; ")
  return {
    scenario,
    target,
    throughput: result.requestsPerSecond,
    unit: "req/s",
    p50Ms: result.p50Ms,
    p99Ms: result.p99Ms,
    requests: result.requests,
    failures: result.failures,
    ...(text !== "" ? { note: text } : {})
  }
}
