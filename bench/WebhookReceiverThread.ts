/**
 * The webhook benchmark's HTTPS receiver in a worker thread, so that its CPU is not counted as
 * the service's when the service runs in the benchmark's own thread (memory mode). It answers
 * 200 to everything, counts arrivals in shared memory and hands the arrival times over on demand.
 */
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads"
import { type Certificate, startReceiver } from "../test/support/WebhookReceiver.ts"

export interface ReceiverThread {
  readonly url: (path: string) => string
  /** Arrivals since the last `reset`. */
  readonly received: () => number
  /** Arrival time of each delivered event id since the last `reset`. */
  readonly arrivals: () => Promise<ReadonlyArray<{ readonly eventId: string; readonly at: number }>>
  readonly reset: () => Promise<void>
  readonly close: () => Promise<void>
}

export const startReceiverThread = async (certificate: Certificate): Promise<ReceiverThread> => {
  const counter = new Int32Array(new SharedArrayBuffer(4))
  const worker = new Worker(new URL(import.meta.url), { workerData: { certificate, counter } })
  const replies: Array<(value: unknown) => void> = []
  worker.on("message", (message) => replies.shift()?.(message))
  const ask = <A>(request: string) =>
    new Promise<A>((resolve) => {
      replies.push(resolve as (value: unknown) => void)
      worker.postMessage(request, [])
    })
  const port = await ask<number>("port")
  return {
    url: (path) => `https://127.0.0.1:${port}${path}`,
    received: () => Atomics.load(counter, 0),
    arrivals: () => ask("arrivals"),
    reset: () => ask("reset"),
    close: async () => {
      await ask("close")
      await worker.terminate()
    }
  }
}

if (!isMainThread && parentPort !== null) {
  const { certificate, counter } = workerData as { certificate: Certificate; counter: Int32Array }
  const arrivals: Array<{ eventId: string; at: number }> = []
  const receiver = await startReceiver(certificate, (request) => {
    arrivals.push({ eventId: request.headers["service-webhook-id"] ?? "", at: request.at })
    receiver.received.length = 0
    Atomics.add(counter, 0, 1)
    return { status: 200 }
  })
  const port = parentPort
  port.on("message", async (request: string) => {
    if (request === "port") port.postMessage(receiver.port, [])
    else if (request === "arrivals") port.postMessage(arrivals, [])
    else if (request === "reset") {
      arrivals.length = 0
      Atomics.store(counter, 0, 0)
      port.postMessage(true, [])
    } else if (request === "close") {
      await receiver.close()
      port.postMessage(true, [])
    }
  })
}
