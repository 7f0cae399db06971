// SPDX-License-Identifier: Apache-2.0
print("wxpay-bench")
