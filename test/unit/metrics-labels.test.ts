// The Prometheus text of counters (metrics.ts): label values escaped as the format wants (backslash, double
// quote, newline), label sets kept apart, one line per set; the same numbers as data in snapshot().
import { expect, test } from 'bun:test'
import { createMetrics } from '../../src/kernel/metrics'

test('labels are written in order and escaped; each label set counts on its own line', () => {
  const m = createMetrics()
  const answers = m.counter('linkbox_api_requests_total', 'Answers.')
  answers.incLabels({ method: 'getLink.json', status: '200' })
  answers.incLabels({ method: 'getLink.json', status: '200' })
  answers.incLabels({ method: 'getLink.json', status: '409' })
  answers.incLabels({ method: 'a\\b"c\nd', status: '400' })
  answers.incLabels({})
  const hits = m.counter('linkbox_hits_total', 'Hits.', 'kind')
  hits.inc('plain')
  hits.inc('say "hi"\\\n', 2)
  hits.inc()
  expect(m.render()).toBe(
    [
      '# HELP linkbox_api_requests_total Answers.',
      '# TYPE linkbox_api_requests_total counter',
      'linkbox_api_requests_total{method="getLink.json",status="200"} 2',
      'linkbox_api_requests_total{method="getLink.json",status="409"} 1',
      'linkbox_api_requests_total{method="a\\\\b\\"c\\nd",status="400"} 1',
      'linkbox_api_requests_total 1',
      '# HELP linkbox_hits_total Hits.',
      '# TYPE linkbox_hits_total counter',
      'linkbox_hits_total{kind="plain"} 1',
      'linkbox_hits_total{kind="say \\"hi\\"\\\\\\n"} 2',
      'linkbox_hits_total 1',
      '',
    ].join('\n'),
  )
  const samples = m.snapshot()[0]!.samples
  expect(samples[2]).toEqual({ labels: { method: 'a\\b"c\nd', status: '400' }, value: 1 })
  expect(samples[3]).toEqual({ labels: {}, value: 1 })
})
