/* Readable kernel names (report/names.c): demangled, folded for a column, distinct names
 * kept distinct. */
#include "config.h"
#include "names.h"
#include "tap.h"

#include <stdbool.h>

#include <stdlib.h>
#include <string.h>

int main(void)
{
	/* three GEMMs whose names differ only at their end (Hugging Face GPT-2 on an H200) */
	static const char *gemm[] = {"_ZN7cutlass7Kernel2I62cutlass_75_tensorop_bf16_s1688gemm_"
	                             "bf16_256x128_32x3_tn_align8EEvNT_6ParamsE",
	                             "_ZN7cutlass7Kernel2I62cutlass_75_tensorop_bf16_s1688gemm_"
	                             "bf16_128x128_32x4_nn_align8EEvNT_6ParamsE",
	                             "_ZN7cutlass7Kernel2I61cutlass_75_tensorop_bf16_s1688gemm_"
	                             "bf16_64x128_32x6_nt_align8EEvNT_6ParamsE"};
	char a[3][64];
	char *full = gp_readable_name(gemm[0]);
	bool have = full && strncmp(full, "_Z", 2);
	if (!have) {
		skip("no __cxa_demangle in this process's libstdc++");
		free(full);
		return done_testing();
	}
	ok(!strcmp(
	       full,
	       "void cutlass::Kernel2<cutlass_75_tensorop_bf16_s1688gemm_bf16_256x128_32x3_tn_"
	       "align8>(cutlass_75_tensorop_bf16_s1688gemm_bf16_256x128_32x3_tn_align8::Params)"),
	   "demangled in full: %s", full);
	free(full);
	for (int i = 0; i < 3; i++)
		gp_display_name(gemm[i], a[i], 51);
	ok(strlen(a[0]) == 50 && !strncmp(a[0], "cutlass::Kernel2<", 17) && strstr(a[0], "..") &&
	       strstr(a[0], "tn_align8>"),
	   "folded to 50 bytes, both ends kept: %s", a[0]);
	ok(strcmp(a[0], a[1]) && strcmp(a[1], a[2]) && strcmp(a[0], a[2]),
	   "three GEMMs stay three names: %s | %s | %s", a[0], a[1], a[2]);
	char b[80];
	gp_display_name("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_"
	                "11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_",
	                b, 51);
	ok(!strncmp(b, "at::native::vectorized_e", 24) && strlen(b) <= 50 && !strchr(b, '(') &&
	       strstr(b, "<..>"),
	   "signature dropped, nested arguments folded: %s", b);
	gp_display_name("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_"
	                "11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_",
	                b, 80);
	ok(!strcmp(b, "at::native::vectorized_elementwise_kernel<4, FillFunctor<float>, "
	              "array<char*, 1ul> >") ||
	       strlen(b) <= 79,
	   "a wider column keeps more: %s", b);
	gp_display_name("loop_add_fusion_7", b, 51);
	ok(!strcmp(b, "loop_add_fusion_7"), "a C name is left alone: %s", b);
	gp_display_name("_ZN3foo3barEv", b, 51);
	ok(!strcmp(b, "foo::bar()"), "a short mangled name in full: %s", b);
	gp_display_name("_Znot_mangled_really", b, 51);
	ok(!strcmp(b, "_Znot_mangled_really"), "what does not demangle stays: %s", b);
	gp_display_name("_ZN12_GLOBAL__N_16kernelEv", b, 12);
	ok(strlen(b) <= 11, "a narrow column is never overrun: %s", b);

	/* a table's rows: names that fold alike are cut where they differ */
	const char *gemms[] = {
	    "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_"
	    "aligna4_alignc4_execute_kernel__5x_cublas",
	    "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_"
	    "aligna4_alignc4_execute_kernel__5x_cublas",
	    "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_"
	    "aligna4_alignc4_execute_split_k_kernel__5x_cublas",
	    "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_"
	    "aligna4_alignc4_execute_split_k_kernel__5x_cublas",
	    "bias_grad(float const*, float*, int, int)"};
	char rows[5][61];
	gp_display_names(gemms, 5, rows[0], sizeof(rows[0]));
	unsigned same = 0, long_rows = 0;
	for (int i = 0; i < 5; i++) {
		long_rows += strlen(rows[i]) > 60;
		for (int j = 0; j < i; j++)
			same += !strcmp(rows[i], rows[j]);
	}
	ok(!same && !long_rows,
	   "four GEMMs that differ in two places read as four: %s | %s | %s | %s", rows[0], rows[1],
	   rows[2], rows[3]);
	ok(!strcmp(rows[4], "bias_grad(float const*, float*, int, int)"),
	   "a row that collides with none is left as it was: %s", rows[4]);
	const char *over[] = {"_ZN5flash42fwd_kernel_with_a_very_long_name_that_goesEPKfPfii",
	                      "_ZN5flash42fwd_kernel_with_a_very_long_name_that_goesEPKdPdii"};
	char two[2][41];
	gp_display_names(over, 2, two[0], sizeof(two[0]));
	ok(strcmp(two[0], two[1]) && strlen(two[0]) <= 40,
	   "overloads that differ in their parameters read as two: %s | %s", two[0], two[1]);
	const char *wide[] = {"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	                      "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	                      "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9_\x1b[31m_end"};
	char w[1][20];
	gp_display_names(wide, 1, w[0], sizeof(w[0]));
	bool whole = true;
	for (size_t i = 0; w[0][i]; i++) /* every 0xc3 is followed by its 0xa9 */
		whole &= (unsigned char)w[0][i] != 0xc3 || (unsigned char)w[0][i + 1] == 0xa9;
	for (size_t i = 0; w[0][i]; i++)
		whole &=
		    (unsigned char)w[0][i] != 0xa9 || (i && (unsigned char)w[0][i - 1] == 0xc3);
	ok(whole && !strchr(w[0], '\x1b'),
	   "a cut never halves a UTF-8 character, and no escape reaches the terminal: %s", w[0]);
	/* names that differ only far apart and in many places: numbered if nothing else */
	char many_names[6][200];
	const char *many[6];
	for (int i = 0; i < 6; i++) {
		snprintf(many_names[i], sizeof(many_names[i]),
		         "kernel_with_a_common_prefix_that_is_long_%c_and_a_middle_that_goes_on_%c_"
		         "then_more_%c_and_more_%c_to_the_end_%c",
		         'a' + (i & 1), 'a' + (i >> 1 & 1), 'a' + (i >> 2 & 1), 'a', 'a');
		many[i] = many_names[i];
	}
	char mrows[6][24];
	gp_display_names(many, 6, mrows[0], sizeof(mrows[0]));
	unsigned msame = 0;
	for (int i = 0; i < 6; i++)
		for (int j = 0; j < i; j++)
			msame += !strcmp(mrows[i], mrows[j]);
	ok(!msame, "six names too alike for a narrow column still read as six: %s | %s | %s",
	   mrows[0], mrows[1], mrows[5]);
	char one[1][61];
	gp_display_names(gemms, 1, one[0], sizeof(one[0]));
	gp_display_name(gemms[0], b, 61);
	ok(!strcmp(one[0], b), "a table of one row is gp_display_name's: %s", one[0]);
	return done_testing();
}
