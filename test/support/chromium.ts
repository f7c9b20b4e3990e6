/**
 * Debian's Chromium as every browser test launches it (playwright-core): headless, no sandbox (the
 * tests run as root), and without the background networking this machine's closed network refuses.
 */
import { chromium, type Browser, type BrowserContext, type CDPSession, type Page } from 'playwright-core';

export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS });
}

/**
 * A browser context (every wait bounded by `stepMs`) whose page has a CTAP2 virtual authenticator
 * of `transport` (`usb`: a security key; `internal`: built into the device), which verifies its user
 * and answers without a prompt (Chrome DevTools Protocol `WebAuthn`).
 */
export async function withAuthenticator(browser: Browser, transport: 'usb' | 'internal', stepMs: number): Promise<{ context: BrowserContext; page: Page; cdp: CDPSession; authenticatorId: string }> {
  const context = await browser.newContext();
  context.setDefaultTimeout(stepMs);
  context.setDefaultNavigationTimeout(stepMs);
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable', { enableUI: false });
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport, hasResidentKey: false, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
  return { context, page, cdp, authenticatorId };
}
