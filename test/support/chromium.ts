/**
 * Debian's Chromium as every browser test launches it (playwright-core): headless, no sandbox (the
 * tests run as root), and without the background networking this machine's closed network refuses.
 */
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: CHROMIUM_ARGS });
}
