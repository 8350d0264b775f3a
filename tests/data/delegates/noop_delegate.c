/* A TFLite external delegate that takes no node: the smallest real library that
 * LiteRT's load_delegate() accepts, for tests/test_remote.py.
 *
 * The external-delegate ABI (tensorflow/lite/delegates/external/external_delegate.cc,
 * "tflite_plugin_create_delegate" / "tflite_plugin_destroy_delegate") and the
 * TfLiteDelegate struct (tensorflow/lite/core/c/common.h: data_, Prepare,
 * CopyFromBufferHandle, CopyToBufferHandle, FreeBufferHandle, flags,
 * opaque_delegate_builder) are C ABI, stable across TFLite / LiteRT releases; the
 * struct is declared here by hand because no TFLite headers are installed.
 *
 * Options: "fail" = "1" makes creation fail (load_delegate then raises), which
 * shows that --delegate-option values reach the library.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int TfLiteStatus; /* kTfLiteOk = 0 */

typedef struct TfLiteDelegate {
  void* data_;
  TfLiteStatus (*Prepare)(void* context, struct TfLiteDelegate* delegate);
  TfLiteStatus (*CopyFromBufferHandle)(void*, struct TfLiteDelegate*, int, void*);
  TfLiteStatus (*CopyToBufferHandle)(void*, struct TfLiteDelegate*, int, void*);
  void (*FreeBufferHandle)(void*, struct TfLiteDelegate*, int*);
  int64_t flags;
  void* opaque_delegate_builder;
} TfLiteDelegate;

static TfLiteStatus prepare(void* context, TfLiteDelegate* delegate) {
  (void)context;
  (void)delegate;
  return 0; /* takes no node: every op stays with the interpreter */
}

TfLiteDelegate* tflite_plugin_create_delegate(char** keys, char** values, size_t n,
                                              void (*report_error)(const char*)) {
  for (size_t i = 0; i < n; ++i) {
    if (strcmp(keys[i], "fail") == 0 && strcmp(values[i], "1") == 0) {
      if (report_error) report_error("noop_delegate: asked to fail (fail=1)");
      return NULL;
    }
  }
  TfLiteDelegate* d = (TfLiteDelegate*)calloc(1, sizeof(TfLiteDelegate));
  if (d) d->Prepare = prepare;
  return d;
}

void tflite_plugin_destroy_delegate(TfLiteDelegate* d) { free(d); }
