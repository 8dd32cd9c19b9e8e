/* Readable kernel names (report/names.c): demangled, folded for a column, distinct names
 * kept distinct. */
#include "config.h"
#include "names.h"
#include "tap.h"

#include <ctype.h>
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
	ok(strlen(a[0]) <= 50 && !strncmp(a[0], "cutlass_75_tensorop_bf16", 24) &&
	       strstr(a[0], "tn_align8") && !strstr(a[0], "Kernel2"),
	   "folded to 50 bytes, CUTLASS's wrapper dropped, the kernel's own name (its precision, "
	   "tile and layout) kept: %s",
	   a[0]);
	ok(strcmp(a[0], a[1]) && strcmp(a[1], a[2]) && strcmp(a[0], a[2]),
	   "three GEMMs stay three names: %s | %s | %s", a[0], a[1], a[2]);
	char b[80];
	gp_display_name("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_"
	                "11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_",
	                b, 51);
	ok(!strncmp(b, "vectorized_elementwise_kernel<", 30) && strlen(b) <= 50 &&
	       !strchr(b, '(') && strstr(b, "FillFunctor<"),
	   "signature and namespaces dropped, the functor kept: %s", b);
	gp_display_name("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_"
	                "11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_",
	                b, 80);
	ok(!strcmp(b, "at::native::vectorized_elementwise_kernel<4, FillFunctor<float>, "
	              "array<char*, 1ul> >") ||
	       strlen(b) <= 79,
	   "a wider column keeps more: %s", b);
	{ /* a lambda's functor too long for its head whole: the head cut, the functor kept,
	   * at every width from 39 columns (issue 50: in 40, "vectorized_elementw.. array<char*,
	   * 2ul>>", the functor lost in a middle cut) */
		static const char *pw =
		    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous "
		    "namespace)::pow_tensor_scalar_kernel_impl<float, "
		    "float>(at::TensorIteratorBase&, "
		    "float)::{lambda(float)#1}, std::array<char*, 2ul> >(int, "
		    "at::native::(anonymous namespace)::pow_tensor_scalar_kernel_impl<float, "
		    "float>(at::TensorIteratorBase&, float)::{lambda(float)#1}, std::array<char*, "
		    "2ul>)";
		unsigned lost = 0, first = 0;
		for (size_t w = 39; w <= 64; w++) {
			gp_display_name(pw, b, w + 1);
			if (!strstr(b, "pow_tensor_scalar") || strlen(b) > w) {
				if (!lost)
					first = (unsigned)w;
				lost++;
			}
		}
		gp_display_name(pw, b, 41);
		ok(!lost,
		   "pow_tensor_scalar's lambda: the functor whole at every width of 39-64 (lost "
		   "at %u widths, the first %u; 40: %s)",
		   lost, first, b);
	}
	gp_display_name("loop_add_fusion_7", b, 51);
	ok(!strcmp(b, "loop_add_fusion_7"), "a C name is left alone: %s", b);
	gp_display_name("_ZN3foo3barEv", b, 51);
	ok(!strcmp(b, "bar"), "a short scoped name without its namespace and parameters: %s", b);
	gp_display_name("_ZN2at6native21elementwise_kernel_58ILi128ELi4EEEviPf", b, 65);
	ok(!strcmp(b, "elementwise_kernel_58<128, 4>"),
	   "a PyTorch name that would fit whole: no namespace, no 'void', no parameters: %s", b);
	gp_display_name("_Znot_mangled_really", b, 51);
	ok(!strcmp(b, "_Znot_mangled_really"), "what does not demangle stays: %s", b);
	gp_display_name("_ZN12_GLOBAL__N_16kernelEv", b, 12);
	ok(strlen(b) <= 11, "a narrow column is never overrun: %s", b);

	/* PyTorch's kernels as they reach a 40-column table (GPT-2 and an SGD loop on an H200/
	 * H100, PyTorch 2.11): no "void", no namespace, no parameters, the functor or the
	 * operation that says what the kernel does kept whole; two kernels never read alike */
	static const struct {
		const char *name, *says;
	} pt[] = {
	    {"void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda("
	     "at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()"
	     "() const::{lambda(float)#1}, std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, "
	     "unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::"
	     "LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_"
	     "kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}"
	     "::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>, TrivialOffset"
	     "Calculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::"
	     "memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)",
	     "direct_copy_kernel_cuda"},
	    {"void at::native::vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel_"
	     "cuda(at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul> >(int, "
	     "at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(float)#1}, "
	     "std::array<char*, 2ul>)",
	     "bfloat16_copy_kernel_cuda"},
	    {"void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, "
	     "float, float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, "
	     "2ul> >(int, at::native::AUnaryFunctor<float, float, float, at::native::binary_"
	     "internal::MulFunctor<float> >, std::array<char*, 2ul>)",
	     "AUnaryFunctor"},
	    {"void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, "
	     "float, float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, "
	     "3ul> >(int, at::native::BinaryFunctor<float, float, float, at::native::binary_"
	     "internal::MulFunctor<float> >, std::array<char*, 3ul>)",
	     "BinaryFunctor"},
	    {"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::"
	     "(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::"
	     "BinaryOpScalarFunctor<float, 1, 1, 0>, std::multiplies<float>, float>(at::native::"
	     "(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::"
	     "BinaryOpScalarFunctor<float, 1, 1, 0>, std::multiplies<float>, float)",
	     "multiplies"},
	    {"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::"
	     "(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::"
	     "BinaryOpScalarFunctor<float, 1, 1, 0>, std::plus<float>, float>(at::native::"
	     "(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::"
	     "BinaryOpScalarFunctor<float, 1, 1, 0>, std::plus<float>, float)",
	     "plus"},
	    {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::"
	     "MeanOps<float, float, float, float>, unsigned int, float, 4, 4> >(at::native::"
	     "ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, "
	     "float, "
	     "4, 4>)",
	     "MeanOps"},
	    {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::"
	     "MaxOps<float>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::"
	     "MaxOps<float>, unsigned int, float, 4, 4>)",
	     "MaxOps"},
	    {"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
	     "at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, "
	     "int)",
	     "LogSoftMaxForwardEpilogue"},
	    {"void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::"
	     "native::(anonymous namespace)::where_kernel_impl(at::TensorIterator&)::{lambda()#1}::"
	     "operator()() const::{lambda()#8}::operator()() const::{lambda(bool, long, long)#1}>("
	     "at::TensorIteratorBase&, at::native::(anonymous namespace)::where_kernel_impl(at::"
	     "TensorIterator&)::{lambda()#1}::operator()() const::{lambda()#8}::operator()() "
	     "const::"
	     "{lambda(bool, long, long)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_"
	     "impl_nocast<at::native::(anonymous namespace)::where_kernel_impl(at::TensorIterator&)"
	     "::{lambda()#1}::operator()() const::{lambda()#8}::operator()() const::{lambda(bool, "
	     "long, long)#1}>(at::TensorIteratorBase&, at::native::(anonymous namespace)::where_"
	     "kernel_impl(at::TensorIterator&)::{lambda()#1}::operator()() const::{lambda()#8}::"
	     "operator()() const::{lambda(bool, long, long)#1} const&)::{lambda(int)#1})",
	     "where_kernel_impl"},
	};
	enum { NPT = sizeof(pt) / sizeof(pt[0]) };
	const char *ptn[NPT];
	char ptrows[NPT][41];
	for (unsigned i = 0; i < NPT; i++)
		ptn[i] = pt[i].name;
	gp_display_names(ptn, NULL, NPT, ptrows[0], sizeof(ptrows[0]));
	for (unsigned i = 0; i < NPT; i++) {
		const char *r = ptrows[i], *at = strstr(r, pt[i].says);
		size_t n = strlen(pt[i].says);
		bool whole = at &&
		             (at == r || !(isalnum((unsigned char)at[-1]) || at[-1] == '_')) &&
		             !(isalnum((unsigned char)at[n]) || at[n] == '_');
		ok(whole && !strstr(r, "::") && strncmp(r, "void ", 5) && !strchr(r, '(') &&
		       strlen(r) <= 40,
		   "%s says %s, in 40 columns, no namespace or parameters", r, pt[i].says);
	}
	unsigned ptsame = 0;
	for (unsigned i = 0; i < NPT; i++)
		for (unsigned j = 0; j < i; j++)
			ptsame += !strcmp(ptrows[i], ptrows[j]);
	ok(!ptsame, "the %u PyTorch kernels read as %u names", NPT, NPT);
	gp_display_name(pt[0].name, b, 80);
	ok(!strcmp(
	       b, "unrolled_elementwise_kernel<direct_copy_kernel_cuda::{lambda(float)#1}, 4, ..>"),
	   "a wider column: the launch's arguments left out, its lambda by its function and "
	   "parameters: %s",
	   b);

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
	gp_display_names(gemms, NULL, 5, rows[0], sizeof(rows[0]));
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
	gp_display_names(over, NULL, 2, two[0], sizeof(two[0]));
	ok(strcmp(two[0], two[1]) && strlen(two[0]) <= 40,
	   "overloads that differ in their parameters read as two: %s | %s", two[0], two[1]);
	const char *wide[] = {"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	                      "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	                      "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9_\x1b[31m_end"};
	char w[1][20];
	gp_display_names(wide, NULL, 1, w[0], sizeof(w[0]));
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
	gp_display_names(many, NULL, 6, mrows[0], sizeof(mrows[0]));
	unsigned msame = 0;
	for (int i = 0; i < 6; i++)
		for (int j = 0; j < i; j++)
			msame += !strcmp(mrows[i], mrows[j]);
	ok(!msame, "six names too alike for a narrow column still read as six: %s | %s | %s",
	   mrows[0], mrows[1], mrows[5]);
	char one[1][61];
	gp_display_names(gemms, NULL, 1, one[0], sizeof(one[0]));
	gp_display_name(gemms[0], b, 61);
	ok(!strcmp(one[0], b), "a table of one row is gp_display_name's: %s", one[0]);

	/* the kind of work, from names seen on the H200 (PyTorch 2.11, JAX, NCCL, Triton),
	 * including the traps: a lambda is no LAMB optimizer, cuDNN's SDPA is attention and
	 * not a convolution, a convert_ is no convolution, cuDNN's fusion is no XLA fusion */
	static const struct {
		const char *name, *kind;
	} kk[] = {
	    {"void cutlass::Kernel2<cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn_align1>("
	     "cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn_align1::Params)",
	     "GEMM"},
	    {"nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_TNT", "GEMM"},
	    {"sm90_xmma_gemm_f32f32_tf32f32_f32_nt_n_tilesize128x256x32_warpgroupsize2x1x1_"
	     "execute_segment_k_off_kernel__5x_cublas",
	     "GEMM"},
	    {"triton_tem_fused_mm_0", "GEMM"},
	    {"void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda("
	     "at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::"
	     "operator()() const::{lambda(float)#1}, std::array<char*, 2ul>, 4>",
	     "copy/transpose/fill"},
	    {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>,"
	     " std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, "
	     "std::array<char*, 3ul>)",
	     "elementwise"},
	    {"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::"
	     "(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::"
	     "UnaryOpFunctor<float, 2, 1, 1>, at::native::Sqrt<float> >",
	     "optimizer"},
	    {"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
	     "at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, "
	     "int)",
	     "softmax"},
	    {"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_"
	     "cga1x1x1_kernel0_0",
	     "attention"},
	    {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float, "
	     "false>(int, float, float const*, float const*, float const*, float*, float*, "
	     "float*)",
	     "normalisation"},
	    {"void at::native::reduce_kernel<128, 4, at::native::ReduceOp<c10::BFloat16, "
	     "at::native::func_wrapper_t<c10::BFloat16, at::native::sum_functor<c10::BFloat16, "
	     "float, c10::BFloat16> > > >",
	     "reduction/scan/sort"},
	    {"void at::native::(anonymous namespace)::embedding_backward_feature_kernel<float, "
	     "float, long>(long const*, float const*, float*, int, long, int)",
	     "indexing"},
	    {"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
	     "communication"},
	    {"void cudnn::fusion::convert_dq_to_16bits<true>(void const*, void*, unsigned int)",
	     "other"},
	    {"loop_add_fusion_7", "elementwise"},
	    {"input_reduce_fusion", "reduction/scan/sort"},
	    {"wrapped_concatenate", "copy/transpose/fill"},
	    {"triton_poi_fused_add_mul_0", "elementwise"},
	    {"triton_red_fused_sum_1", "reduction/scan/sort"},
	    {"sm80_xmma_fprop_implicit_gemm_indexed_f16f16_f16f32_f32_nhwckrsc_nchw",
	     "convolution"},
	    {"void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, "
	     "false, cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const> > >",
	     "GEMM"},
	    {"void at::native::(anonymous namespace)::convert_kernel<float>(float*)", "other"},
	};
	for (size_t i = 0; i < sizeof(kk) / sizeof(kk[0]); i++) {
		const char *got = gp_kernel_kind(kk[i].name);
		ok(!strcmp(got, kk[i].kind), "kind of %.50s: %s (want %s)", kk[i].name, got,
		   kk[i].kind);
	}
	ok(!strcmp(gp_kernel_kind(""), "other") && !strcmp(gp_kernel_kind(NULL), "other"),
	   "no name: other");
	/* names that are no kernel's keep their scope (the reviewer: frames and NVTX ranges
	 * lost it with the kernels' shortening): two functions named forward, two ranges named
	 * layer3, the allocator's frame; kernels that only their parameters tell apart are two */
	char f1[41], f2[41], f3[61];
	gp_display_label("_ZN5Model7forwardERKN2at6TensorE", f1, sizeof(f1));
	gp_display_label("_ZN7Encoder7forwardERKN2at6TensorE", f2, sizeof(f2));
	ok(!strcmp(f1, "Model::forward(at::Tensor const&)") &&
	       !strcmp(f2, "Encoder::forward(at::Tensor const&)"),
	   "frames keep their scope: %s | %s", f1, f2);
	gp_display_label("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc("
	                 "signed char, unsigned long, CUstream_st*)",
	                 f3, sizeof(f3));
	ok(strstr(f3, "c10::cuda::") && strstr(f3, "malloc") && !strchr(f3, '('),
	   "a long frame: its parameters go, its scope stays: %s", f3);
	const char *mixed[] = {"encoder::layer3", "decoder::layer3", "_ZN2ns4kernEPf"};
	const bool kern[] = {false, false, true};
	char m3[3][41];
	gp_display_names(mixed, kern, 3, m3[0], sizeof(m3[0]));
	ok(!strcmp(m3[0], "encoder::layer3") && !strcmp(m3[1], "decoder::layer3") &&
	       !strcmp(m3[2], "kern"),
	   "a start-up table's ranges as the user wrote them, its kernel shortened: %s | %s | %s",
	   m3[0], m3[1], m3[2]);
	const char *ov[] = {"_ZN2ns4kernEPf", "_ZN2ns4kernEPd"};
	char o2[2][41];
	gp_display_names(ov, NULL, 2, o2[0], sizeof(o2[0]));
	ok(strcmp(o2[0], o2[1]) && !strstr(o2[1], "#2"),
	   "kernels only their parameters tell apart: two names, not 'kern #2': %s | %s", o2[0],
	   o2[1]);
	return done_testing();
}
