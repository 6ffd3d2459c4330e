// T.ieee_* as the CPU simulator computes them (tilec/IeeeMath.h): each rounding mode's direction, float32 and
// float64, and the call names the front end makes and code generation reads.
#include "tilec/IeeeMath.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace tilec;

TEST(IeeeMath, RoundsAddInTheModesDirection) {
    const IeeeOp &add = *ieeeOp("ieee_add");
    const double tiny = std::ldexp(1.0, -30); // far below float32's half ulp of 1 (2^-24)
    EXPECT_EQ(ieeeEvaluate(add, "rn", true, 1.0, tiny, 0), 1.0);
    EXPECT_EQ(ieeeEvaluate(add, "rz", true, 1.0, tiny, 0), 1.0);
    EXPECT_EQ(ieeeEvaluate(add, "rd", true, 1.0, tiny, 0), 1.0);
    EXPECT_EQ(ieeeEvaluate(add, "ru", true, 1.0, tiny, 0), (double)std::nextafter(1.0f, 2.0f));
    // toward zero on a negative result rounds up (toward zero), down rounds away
    EXPECT_EQ(ieeeEvaluate(add, "rz", true, -1.0, -tiny, 0), -1.0);
    EXPECT_EQ(ieeeEvaluate(add, "rd", true, -1.0, -tiny, 0), (double)std::nextafter(-1.0f, -2.0f));
    // float64 keeps double's precision
    EXPECT_EQ(ieeeEvaluate(add, "rn", false, 1.0, tiny, 0), 1.0 + tiny);
}

TEST(IeeeMath, DivisionAndFmaInBothDirections) {
    const IeeeOp &div = *ieeeOp("ieee_fdiv"), &fma = *ieeeOp("ieee_fmaf");
    double down = ieeeEvaluate(div, "rd", true, 1.0, 3.0, 0), up = ieeeEvaluate(div, "ru", true, 1.0, 3.0, 0);
    EXPECT_LT(down, 1.0 / 3.0);
    EXPECT_GT(up, 1.0 / 3.0);
    EXPECT_EQ((double)std::nextafter((float)down, 1.0f), up);
    EXPECT_EQ(ieeeEvaluate(fma, "rn", true, 2.0, 3.0, 1.0), 7.0);
}

TEST(IeeeMath, CallNames) {
    auto c = ieeeCall("ieee_mul.ru");
    ASSERT_TRUE(c);
    EXPECT_STREQ(c->first->f32, "__fmul");
    EXPECT_EQ(c->second, "ru");
    EXPECT_FALSE(ieeeCall("ieee_mul.rx"));
    EXPECT_FALSE(ieeeCall("ieee_pow.rn"));
    EXPECT_FALSE(ieeeCall("exp"));
    EXPECT_TRUE(ieeeOp("ieee_frsqrt")->onlyNearest);
}
