/**
 * A Postgres server of the test's own (OwnPostgres.ts), an HTTPS webhook receiver and a real
 * service process on that server: for tests that stop, kill or freeze the database under a
 * running service. Everything a file's tests started is stopped after them.
 */
import { afterAll } from "vitest"
import { type OwnPostgres, startOwnPostgres } from "./OwnPostgres.ts"
import { freePort } from "./Ports.ts"
import { type ChildService, startProcess } from "./Service.ts"
import { makeCertificate, type Receiver, type Responder, startReceiver } from "./WebhookReceiver.ts"
import { serviceEnv } from "./Webhooks.ts"

export interface OwnPostgresService {
  readonly postgres: OwnPostgres
  readonly receiver: Receiver
  readonly service: ChildService
  readonly port: number
}

/** Registers the clean-up; the function it returns starts one server, receiver and service. */
export const useOwnPostgresService = () => {
  const cleanups: Array<() => Promise<void>> = []
  afterAll(async () => {
    for (const cleanup of cleanups.splice(0).toReversed()) await cleanup()
  })
  return async (env: Record<string, string> = {}, respond?: Responder): Promise<OwnPostgresService> => {
    const postgres = await startOwnPostgres()
    cleanups.push(() => postgres.destroy())
    const certificate = makeCertificate()
    const receiver = await startReceiver(certificate, respond)
    cleanups.push(() => receiver.close())
    const port = await freePort()
    const service = await startProcess(serviceEnv(postgres.url, certificate, env), port)
    cleanups.push(async () => {
      if (service.process.exitCode === null) await service.kill9()
    })
    return { postgres, receiver, service, port }
  }
}
