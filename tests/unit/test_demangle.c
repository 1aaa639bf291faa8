// SPDX-License-Identifier: MIT
/* C++ names: demangling, the base form globs match without a parameter list, and matching. */
#include "elf/demangle.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>

static void check_base(const char *full, const char *want)
{
	char *got = demangle__base(full);

	CHECK_STR(got, want);
	free(got);
}

/* Names as tests/targets/cxx_ops.cpp's are mangled by g++. */
static void test_demangle_methods(void)
{
	const struct demangled *d = demangle__get("_ZN4onnx4Conv7ComputeERNS_7ContextE");

	CHECK(d != NULL);
	if (!d)
		return;
	CHECK_STR(d->full, "onnx::Conv::Compute(onnx::Context&)");
	CHECK_STR(d->base, "onnx::Conv::Compute");
	/* a function template: the demangler prints its return type first */
	d = demangle__get("_ZN4onnx4math7SoftmaxIdEET_RNS_7ContextES2_");
	CHECK(d != NULL);
	if (d) {
		CHECK_STR(d->full, "double onnx::math::Softmax<double>(onnx::Context&, double)");
		CHECK_STR(d->base, "onnx::math::Softmax<double>");
	}
	d = demangle__get("_ZNK4onnx13SoftmaxKernel4NameEv");
	CHECK(d != NULL);
	if (d)
		CHECK_STR(d->base, "onnx::SoftmaxKernel::Name");
}

static void test_not_cxx(void)
{
	CHECK(demangle__get("decode_frame") == NULL);
	/* the demangler would read a bare "i" as the type int */
	CHECK(demangle__get("i") == NULL);
	CHECK(demangle__get("_Zbogus") == NULL);
	CHECK(demangle__get("") == NULL);
	CHECK(demangle__get(NULL) == NULL);
	CHECK_STR(demangle__display("avcodec_send_packet"), "avcodec_send_packet");
	CHECK_STR(demangle__display("_ZN4onnx4Conv7ComputeERNS_7ContextE"),
		  "onnx::Conv::Compute(onnx::Context&)");
	CHECK_STR(demangle__display("_Zbogus"), "_Zbogus");
}

static void test_base_forms(void)
{
	check_base("foo::operator()(int) const", "foo::operator()");
	check_base("bool operator< <Foo>(Foo const&, Foo const&)", "operator< <Foo>");
	check_base("operator<<(std::ostream&, Foo const&)", "operator<<");
	check_base("Foo::operator->() const", "Foo::operator->");
	check_base("Foo::operator bool() const", "Foo::operator bool");
	check_base("operator new(unsigned long)", "operator new");
	check_base("operator delete[](void*)", "operator delete[]");
	check_base("(anonymous namespace)::Worker::run(int)", "(anonymous namespace)::Worker::run");
	check_base("ns::f()::{lambda(int)#1}::operator()(int) const",
		   "ns::f()::{lambda(int)#1}::operator()");
	check_base("std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >"
		   "::find(char const*, unsigned long) const",
		   "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >"
		   "::find");
	check_base("void std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>"
		   "(__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > >, "
		   "int const&)",
		   "std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>");
	check_base("ns::name[abi:cxx11](int)", "ns::name");
	check_base("Foo::bar() &&", "Foo::bar");
	/* a cold part and a thunk are not the function: their base says so */
	check_base("onnx::Conv::Compute(onnx::Context&) [clone .cold]",
		   "onnx::Conv::Compute [clone .cold]");
	check_base("non-virtual thunk to onnx::Conv::Compute(onnx::Context&)",
		   "non-virtual thunk to onnx::Conv::Compute");
	/* not a function: left whole */
	check_base("onnx::Conv", "onnx::Conv");
}

static void test_match(void)
{
	const char *conv = "_ZN4onnx4Conv7ComputeERNS_7ContextE";

	CHECK(demangle__match("onnx::Conv*::Compute", conv));
	CHECK(demangle__match("onnx::*::Compute", conv));
	CHECK(demangle__match("onnx::Conv::Compute(onnx::Context&)", conv));
	CHECK(demangle__match("onnx::Conv::Compute(*)", conv));
	CHECK(demangle__match(conv, conv));
	CHECK(demangle__match("_ZN4onnx4Conv*", conv));
	CHECK(!demangle__match("onnx::Relu::Compute", conv));
	CHECK(!demangle__match("Compute", conv));
	CHECK(!demangle__match("onnx::Conv", conv));
	/* the base keeps clone suffixes: a glob for a function does not catch its cold part */
	CHECK(!demangle__match("onnx::Conv::Compute", "_ZN4onnx4Conv7ComputeERNS_7ContextE.cold"));
	CHECK(demangle__match("decode_*", "decode_frame"));
	CHECK(!demangle__match("decode_*", "encode_frame"));
}

/* Many names: the cache grows and keeps every entry findable and stable. */
static void test_cache(void)
{
	const struct demangled *first = demangle__get("_Z2f0v");
	char name[96], want[32];
	int bad = 0;

	for (int i = 0; i < 5000; i++) {
		const struct demangled *d;

		snprintf(want, sizeof(want), "f%d", i);
		snprintf(name, sizeof(name), "_Z%zu%sv", strlen(want), want);
		d = demangle__get(name);
		bad += !d || strcmp(d->base, want) || d != demangle__get(name);
	}
	CHECK(bad == 0);
	/* entries stay where they were when the table grew */
	CHECK(first != NULL && demangle__get("_Z2f0v") == first);
	CHECK_STR(demangle__get("_Z2f0v")->full, "f0()");
	demangle__reset();
	CHECK_STR(demangle__display("_Z2f7v"), "f7()");
	demangle__reset();
}

int main(void)
{
	RUN(test_demangle_methods);
	RUN(test_not_cxx);
	RUN(test_base_forms);
	RUN(test_match);
	RUN(test_cache);
	UNIT_EXIT();
}
