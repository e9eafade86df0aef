// The clicks feature's public face (the re-exports links needs; the lead unions this file at merge).
export { createClassifier, MAX_NAMES, OTHER } from './classify'
export { DIMENSIONS, dayOf, type DimNames } from './store'
export type { ClickCounts } from './counts'
export type { ClickRecorder } from './recorder'
export type { DayKeys } from './day-keys'
