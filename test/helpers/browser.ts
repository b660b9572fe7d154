/**
 * A real browser for the page tests (and the bench's screenshot of the status page): Debian's
 * `chromium`, driven by puppeteer-core (which never downloads one). A missing browser fails the
 * test with what to do; it is never a skip.
 */
import { existsSync } from 'node:fs';
import type { TestContext } from 'node:test';
import puppeteer from 'puppeteer-core';
import type { Browser, Page } from 'puppeteer-core';

/** Where Debian (and Ubuntu's deb) put Chromium; KCP_CHROMIUM names another. */
const CANDIDATES = ['/usr/lib/chromium/chromium', '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];

export function chromiumPath(): string {
  const named = process.env['KCP_CHROMIUM'];
  if (named !== undefined && named !== '') {
    if (!existsSync(named)) throw new Error(`KCP_CHROMIUM=${named}: no such file`);
    return named;
  }
  const found = CANDIDATES.find((path) => existsSync(path));
  if (found === undefined) {
    throw new Error(
      'Chromium is not installed: the status page is tested in a real browser. Install it with `apt-get install chromium` ' +
        '(`npm test` set-up does so when it runs as root), or set KCP_CHROMIUM to a Chromium or Chrome binary.',
    );
  }
  return found;
}

/** A headless Chromium (the caller closes it). */
export function launchChromium(): Promise<Browser> {
  return puppeteer.launch({
    executablePath: chromiumPath(),
    headless: true,
    // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--no-default-browser-check'],
  });
}

/** A headless Chromium, closed after the test. */
export async function launchBrowser(t: TestContext): Promise<Browser> {
  const browser = await launchChromium();
  t.after(() => browser.close());
  return browser;
}

/**
 * Runs a JavaScript expression in the page and returns its value. Expressions, not functions:
 * the project is type-checked without the DOM library, so page code is written as the page runs it.
 */
export function inPage<T>(page: Page, expression: string): Promise<T> {
  return page.evaluate(expression) as Promise<T>;
}

/** The element's `data-value` (the raw figure behind its text), or null when absent. */
export function dataValue(page: Page, selector: string): Promise<string | null> {
  return inPage(page, `document.querySelector(${JSON.stringify(selector)})?.dataset.value ?? null`);
}

/** The element's text, or null when absent. */
export function textOf(page: Page, selector: string): Promise<string | null> {
  return inPage(page, `document.querySelector(${JSON.stringify(selector)})?.textContent ?? null`);
}

/** Waits until the element's data-value is `expected`; the error says what the page showed instead. */
export async function waitForDataValue(page: Page, selector: string, expected: number | string, timeoutMs = 15_000): Promise<void> {
  const sel = JSON.stringify(selector);
  try {
    await page.waitForFunction(`document.querySelector(${sel})?.dataset.value === ${JSON.stringify(String(expected))}`, {
      timeout: timeoutMs,
    });
  } catch (error) {
    const shown = await dataValue(page, selector).catch(() => 'nothing');
    throw new Error(`the page shows ${selector} = ${String(shown)}, expected ${String(expected)}`, { cause: error });
  }
}
