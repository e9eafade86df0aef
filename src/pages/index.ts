// The service's own pages (home, API documents, health, metrics, assets): the feature for app.ts.
export { createPagesFeature, type PagesDeps } from './feature'
