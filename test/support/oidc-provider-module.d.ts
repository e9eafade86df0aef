// oidc-provider ships no types (its @types package is a separate, unpinned dependency): the tests' provider
// (oidc-provider.ts) uses it untyped.
declare module 'oidc-provider' {
  const Provider: any
  export default Provider
}
