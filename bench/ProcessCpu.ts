/**
 * CPU time of processes on this machine, from /proc (Linux): what a benchmark charges to the
 * service, and to Postgres, per operation. Contention on a small machine distorts throughput
 * more than it distorts CPU time.
 */
import { readdirSync, readFileSync } from "node:fs"

/** utime + stime of one `/proc/<pid>/stat` line, in seconds (clock ticks are 1/100 s). */
const statSeconds = (stat: string): number => {
  // The command name may hold spaces; the fields after it are space-separated.
  const fields = stat.slice(stat.lastIndexOf(") ") + 2).split(" ")
  return (Number(fields[11]) + Number(fields[12])) / 100
}

/** CPU seconds (user + system) a process has used so far. */
export const processCpu = (pid: number): number => statSeconds(readFileSync(`/proc/${pid}/stat`, "utf8"))

/**
 * CPU seconds of every `postgres` process on this machine (the server of all databases, other
 * users' too); 0 when Postgres runs elsewhere, so callers report it only when it moved.
 */
export const postgresCpu = (): number => {
  let total = 0
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8")
      if (stat.includes("(postgres)")) total += statSeconds(stat)
    } catch {
      // The process ended meanwhile.
    }
  }
  return total
}
