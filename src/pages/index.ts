// The service's own pages (home, API documents, health, metrics, assets); app.ts wires their feature.ts.
export type { PagesDeps } from './feature'
