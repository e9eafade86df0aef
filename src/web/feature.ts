// What a feature hands the composition root (app.ts): its routes, API methods, metrics, jobs, start and close steps;
// the root makes the shared parts (Shared), the features in order, and wires them.
import type { AnyElysia } from 'elysia'
import type { Config } from '../kernel/config'
import type { ChangeFeed } from '../db/changes'
import type { DatabaseHealth } from '../db/health'
import type { Db } from '../db/sqlite'
import type { Events } from '../kernel/events'
import type { ApiMethod } from './api'
import type { Geo } from '../kernel/geo'
import type { FaultLog } from './fault-log'
import type { HotRoute } from './pipeline'
import type { RateLimiter } from './rate-limit'
import type { Logger } from '../kernel/log'
import type { Metrics } from '../kernel/metrics'
import type { LinkSigner } from '../kernel/signing'

export interface Feature {
  /** Routes answered before the router (the redirect; see web/pipeline.ts). */
  hot?: HotRoute[]
  /** Its pages and files, as an Elysia plugin. */
  routes?: AnyElysia
  /** Its /api methods (the API pipeline, the documents). */
  api?: ApiMethod[]
  /** Declares its gauges, read at scrape time (counters a service bumps are declared with it, on Shared's metrics). */
  metrics?: (metrics: Metrics) => void
  /** Work done now and then (sweeps): each runs when the jobs start and every `everyMs` after. */
  jobs?: Job[]
  /** Starts what runs while the service listens (timers, senders). */
  listen?: () => void
  /** Before the HTTP server stops: answers what it holds open, so that the stop does not wait for it. */
  stopping?: () => void
  /** After the HTTP server stopped: finishes and releases its work (writes what it holds). */
  close?: () => void | Promise<void>
}

export interface Job {
  name: string
  everyMs: number
  /** Its result is not used; a failure (thrown or rejected) goes to the fault log. */
  run: () => unknown
}

/** Runs each job now and every `everyMs` after (timers that do not keep the process alive); returns the stop. */
export function startJobs(jobs: Job[], faults: FaultLog): () => void {
  const timers = jobs.map((job) => {
    const run = () => {
      try {
        Promise.resolve(job.run()).catch((err) => faults.fault(job.name, err))
      } catch (err) {
        faults.fault(job.name, err)
      }
    }
    run()
    const timer = setInterval(run, job.everyMs)
    timer.unref?.()
    return timer
  })
  return () => timers.forEach((t) => clearInterval(t))
}

/** The parts every feature may use, made by the root before any feature. */
export interface Shared {
  config: Config
  /** SQLite's connection (data_dir/linkbox.db); null on PostgreSQL: features are handed their stores by app/. */
  db: Db | null
  /** Whether the database can be reached (db/health.ts): always on SQLite; PostgreSQL's goes down and up. */
  health: DatabaseHealth
  log: Logger
  /** Unexpected errors, with their stacks, into the log (at most 10 a minute: web/fault-log.ts). */
  faults: FaultLog
  clock: () => number
  /** In-process events (link.created, …). */
  events: Events
  /** Changes between processes and nodes (db/changes.ts): a local feed on SQLite. */
  changes: ChangeFeed
  signer: LinkSigner
  limiter: RateLimiter
  metrics: Metrics
  /** Countries of addresses (geo/index.ts), made once: visit statistics and redirect rules ask it. */
  geo: Geo
  /** The client address of a request (web/pipeline.ts). */
  clientIp: (request: Request) => string
  /** The SSRF guard's settings for features that reach out (media, webhooks, frame checks). */
  guard: {
    resolve?: (host: string) => Promise<string[]>
    isAllowed?: (address: string) => boolean
  }
  /** The listening server once there is one (a held request asks it for a longer idle timeout). */
  server: () => ReturnType<typeof Bun.serve> | null
}
