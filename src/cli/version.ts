// `linkbox version` with options (`-c FILE`): the plain `linkbox version` is answered by main.ts before
// anything loads (test/e2e/startup.test.ts holds it to that).
import { VERSION } from '../kernel/version'

export async function run(): Promise<number> {
  console.log(VERSION)
  return 0
}
