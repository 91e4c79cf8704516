/**
 * Where the API key lives while the tab is open: sessionStorage only (decisions.md 8). Never in
 * the URL, localStorage, a cookie, the DOM or a log; closing the tab forgets it.
 */
const STORAGE_KEY = "service.dashboard.apiKey"

export const storedKey = (): string | undefined => {
  try {
    return sessionStorage.getItem(STORAGE_KEY) ?? undefined
  } catch {
    // Storage can be disabled; the user then signs in again on every load.
    return undefined
  }
}

export const storeKey = (key: string): void => {
  try {
    sessionStorage.setItem(STORAGE_KEY, key)
  } catch {
    // Without storage the key lives only in memory for this page.
  }
}

export const forgetKey = (): void => {
  try {
    sessionStorage.removeItem(STORAGE_KEY)
  } catch {
    // Nothing was stored.
  }
}
