// SPDX-License-Identifier: MIT
/* A plugin that tests/targets/spawner.c loads with dlopen after tracer attached. */
__attribute__((noinline, noipa, used)) int plugin_work(int i)
{
	volatile int x = i;

	return x * 2;
}
