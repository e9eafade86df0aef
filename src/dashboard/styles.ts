// The dashboard's stylesheet, served as one file from its parts (assets/dashboard*.css, embedded by the imports).
import dashboardCss from '../../assets/dashboard.css' with { type: 'text' }
import dashboardRulesCss from '../../assets/dashboard-rules.css' with { type: 'text' }
import dashboardBulkCss from '../../assets/dashboard-bulk.css' with { type: 'text' }
import importCss from '../../assets/dashboard-import.css' with { type: 'text' }
import dashboardTimesCss from '../../assets/dashboard-times.css' with { type: 'text' }
import dashboardHooksCss from '../../assets/dashboard-hooks.css' with { type: 'text' }
import dashboardUtmCss from '../../assets/dashboard-utm.css' with { type: 'text' }
import dashboardPreviewCss from '../../assets/dashboard-preview.css' with { type: 'text' }
import dashboardMediaCss from '../../assets/dashboard-media.css' with { type: 'text' }

export const DASHBOARD_CSS = [
  dashboardCss,
  dashboardRulesCss,
  dashboardBulkCss,
  importCss,
  dashboardTimesCss,
  dashboardHooksCss,
  dashboardUtmCss,
  dashboardPreviewCss,
  dashboardMediaCss,
]
  .map((part) => part as unknown as string)
  .join('\n')
/** Part of the stylesheet's URL: a new release's CSS gets a new URL, so it can be cached for a year. */
export const DASHBOARD_CSS_VERSION = new Bun.CryptoHasher('sha256').update(DASHBOARD_CSS).digest('hex').slice(0, 12)
