/**
 * A screenshot of the proxy's status page (/kube-cache-proxy/) after the bench's LIST scenarios,
 * taken in headless Chromium: the picture docs/status-page.md shows is of a real run's figures.
 */
import { launchChromium } from '../test/helpers/browser.ts';

/** The page's figures appear once its first poll is answered. */
const RENDERED_TIMEOUT_MS = 15_000;

export async function screenshotStatusPage(proxyUrl: string, file: string): Promise<void> {
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1200, height: 800, deviceScaleFactor: 1 });
    await page.goto(`${proxyUrl}/kube-cache-proxy/`, { waitUntil: 'load' });
    await page.waitForSelector('#reads-cache[data-value]', { timeout: RENDERED_TIMEOUT_MS });
    await page.screenshot({ path: file, fullPage: true });
  } finally {
    await browser.close();
  }
}
