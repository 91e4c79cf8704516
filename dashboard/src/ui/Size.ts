/**
 * A size in bytes as people read it: "1 byte", "512 bytes"; from 1 KiB up the binary unit with
 * one decimal at most and the exact count beside it, "1.5 KiB (1,536 bytes)". Binary units, as
 * the service's file cap is stated (25 MiB by default); numbers in the reader's locale.
 */
const UNITS = ["KiB", "MiB", "GiB", "TiB"] as const
const scaled = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 })
const exact = new Intl.NumberFormat(undefined)

export const formatSize = (bytes: number): string => {
  if (bytes < 1024) return bytes === 1 ? "1 byte" : `${exact.format(bytes)} bytes`
  let value = bytes / 1024
  let unit = 0
  // 1,048,575 bytes is "1 MiB", not "1,024 KiB": the step up follows the rounding.
  while (value >= 1023.95 && unit < UNITS.length - 1) {
    value /= 1024
    unit++
  }
  return `${scaled.format(value)} ${UNITS[unit]} (${exact.format(bytes)} bytes)`
}
