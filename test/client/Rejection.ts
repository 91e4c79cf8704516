/** The client tests' one way to read a rejection of the Promise client: the ServiceError it must be. */
import { expect } from "vitest"
import { ServiceError } from "../../client/index.ts"

export const rejection = async (promise: Promise<unknown>): Promise<ServiceError> => {
  try {
    await promise
  } catch (error) {
    expect(error).toBeInstanceOf(ServiceError)
    return error as ServiceError
  }
  throw new Error("expected a rejection")
}
