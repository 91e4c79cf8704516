/**
 * Configuration for tests: the service reads every variable through Effect's `Config`, so a test
 * gives its variables as a record instead of the process environment.
 */
import { ConfigProvider, Layer } from "effect"

export type Env = Readonly<Record<string, string | undefined>>

/** A `ConfigProvider` over `env` alone (the process environment is not consulted). */
export const configLayer = (env: Env): Layer.Layer<never> => ConfigProvider.layer(ConfigProvider.fromEnvRecord({ ...env }))
