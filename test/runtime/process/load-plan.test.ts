/**
 * The shadow plan's loader (runtime/process/load-plan.ts `loadShadowForRun`): a plan file checked
 * like any plan (checksum), a config compiled, told apart by the text; every failure is
 * `SVC_ERR_SHADOW_INVALID` naming the file with the loader's code. And `--shadow` is refused, loudly,
 * by a role that decides no request itself.
 */
import { stringify } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { prettyJson } from '../../../compiler/plan/canonical-json.ts';
import { loadShadowForRun, refuseShadowOutsideAllInOne } from '../../../runtime/process/load-plan.ts';
import { BASE_SETTINGS, compileText } from '../../support/compile-text.ts';
import { configDir } from '../../e2e/support.ts';

const cfg = configDir();
afterAll(() => cfg.remove());
const ROUTES = [{ from: 'https://app.example.com', to: 'http://up', policy: 'allow if authenticated_user' }];

describe('loadShadowForRun', () => {
  it('compiles a config and reads a plan file, the same plan either way', async () => {
    const text = stringify({ ...BASE_SETTINGS, routes: ROUTES });
    const configPath = cfg.file('candidate.yaml', text);
    const fromConfig = await loadShadowForRun(configPath, {});
    const planPath = cfg.file('candidate.json', prettyJson(compileText(text, configPath).plan));
    const fromPlan = await loadShadowForRun(planPath, {});
    expect(fromPlan.checksum).toBe(fromConfig.checksum);
  });

  it('a plan file edited by hand (checksum), a config that does not compile, a missing file: SVC_ERR_SHADOW_INVALID naming the file', async () => {
    const plan = compileText(stringify({ ...BASE_SETTINGS, routes: ROUTES })).plan!;
    const edited = cfg.file('edited.json', prettyJson({ ...plan, body: { ...plan.body, routes: [] } }));
    await expect(loadShadowForRun(edited, {})).rejects.toMatchObject({ code: 'SVC_ERR_SHADOW_INVALID', message: expect.stringContaining('edited.json') });
    await expect(loadShadowForRun(edited, {})).rejects.toMatchObject({ message: expect.stringContaining('SVC_ERR_PLAN_INVALID') });
    const broken = cfg.file('broken.yaml', stringify({ ...BASE_SETTINGS, routes: [{ from: 'not a url', to: 'x' }] }));
    await expect(loadShadowForRun(broken, {})).rejects.toMatchObject({ code: 'SVC_ERR_SHADOW_INVALID', message: expect.stringContaining('SVC_ERR_CONFIG_INVALID') });
    await expect(loadShadowForRun(`${cfg.dir}/missing.yaml`, {})).rejects.toMatchObject({ code: 'SVC_ERR_SHADOW_INVALID', message: expect.stringContaining('missing.yaml') });
  });
});

describe('refuseShadowOutsideAllInOne', () => {
  it('all-in-one takes --shadow; the proxy, authenticate, authorize and databroker roles refuse it with SVC_ERR_SHADOW_UNSUPPORTED_ROLE', () => {
    const plan = compileText(stringify({ ...BASE_SETTINGS, routes: ROUTES })).plan!;
    expect(() => refuseShadowOutsideAllInOne('c.yaml', plan)).not.toThrow();
    expect(() => refuseShadowOutsideAllInOne(undefined, plan)).not.toThrow();
    for (const services of ['proxy', 'authenticate', 'authorize', 'databroker']) {
      const role = { ...plan, body: { ...plan.body, settings: { ...plan.body.settings, mode: { ...plan.body.settings.mode, services } } } } as typeof plan;
      expect(() => refuseShadowOutsideAllInOne('c.yaml', role)).toThrow(expect.objectContaining({ code: 'SVC_ERR_SHADOW_UNSUPPORTED_ROLE' }));
      expect(() => refuseShadowOutsideAllInOne(undefined, role)).not.toThrow();
    }
  });
});
