// libm in double and float: trig, exp/log, pow, roots, rounding, fmod, hypot, atan2, fma, lrint.
// Results printed with %.17g (double) / %.9g (float) and hex so any ULP difference is visible.
// Default rounding mode only: non-default FPCR rounding modes and FPSR flags are in fp_edge.c.
#include <stdio.h>
#include <math.h>

typedef double (*d1)(double);
typedef float (*f1)(float);
struct fn1 { const char *name; d1 d; f1 f; };

static const struct fn1 unary[] = {
    {"sin", sin, sinf}, {"cos", cos, cosf}, {"tan", tan, tanf}, {"asin", asin, asinf}, {"acos", acos, acosf},
    {"atan", atan, atanf}, {"sinh", sinh, sinhf}, {"cosh", cosh, coshf}, {"tanh", tanh, tanhf},
    {"exp", exp, expf}, {"exp2", exp2, exp2f}, {"expm1", expm1, expm1f}, {"log", log, logf},
    {"log10", log10, log10f}, {"log2", log2, log2f}, {"log1p", log1p, log1pf}, {"sqrt", sqrt, sqrtf},
    {"cbrt", cbrt, cbrtf}, {"floor", floor, floorf}, {"ceil", ceil, ceilf}, {"round", round, roundf},
    {"trunc", trunc, truncf}, {"rint", rint, rintf}, {"nearbyint", nearbyint, nearbyintf}, {"fabs", fabs, fabsf},
    {"erf", erf, erff}, {"lgamma", lgamma, lgammaf}, {"tgamma", tgamma, tgammaf},
};

static const double inputs[] = {
    0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 1.5, 2.5, -2.5, 3.0, 0.1, 0.7853981633974483, 1.5707963267948966,
    3.141592653589793, 10.0, -7.25, 100.5, 1e-10, 1e10, 1e300, -1e-300, 5e-324, 123456.789, 0.9999999999999999,
    710.0, -745.5, 88.7, INFINITY, -INFINITY, NAN,
};
#define NIN (sizeof inputs / sizeof inputs[0])

static unsigned long long bits(double d) { union { double d; unsigned long long u; } x = {d}; return x.u; }
static unsigned fbits(float f) { union { float f; unsigned u; } x = {f}; return x.u; }

int main(void)
{
    for (size_t i = 0; i < sizeof unary / sizeof unary[0]; i++) {
        for (size_t k = 0; k < NIN; k++) {
            double x = inputs[k];
            double r = unary[i].d(x);
            float rf = unary[i].f((float)x);
            printf("%s(%.17g) = %.17g [%016llx] f=%.9g [%08x]\n", unary[i].name, x, r, bits(r), (double)rf, fbits(rf));
        }
    }
    static const double ys[] = {0.0, 0.5, 2.0, -3.0, 0.3333333333333333, 10.0, -0.5, 1e-5, INFINITY, NAN};
    for (size_t k = 0; k < NIN; k += 2) {
        for (size_t j = 0; j < sizeof ys / sizeof ys[0]; j++) {
            double x = inputs[k], y = ys[j];
            double p = pow(x, y), fm = fmod(x, y), h = hypot(x, y), a2 = atan2(x, y), rem = remainder(x, y);
            float pf = powf((float)x, (float)y), fmf = fmodf((float)x, (float)y), hf = hypotf((float)x, (float)y),
                  a2f = atan2f((float)x, (float)y);
            printf("x=%.17g y=%.17g pow=%.17g fmod=%.17g hypot=%.17g atan2=%.17g rem=%.17g\n", x, y, p, fm, h, a2, rem);
            printf("   f: pow=%.9g fmod=%.9g hypot=%.9g atan2=%.9g fmin=%g fmax=%g copysign=%g\n", (double)pf, (double)fmf,
                   (double)hf, (double)a2f, fmin(x, y), fmax(x, y), copysign(1.0, y));
        }
    }
    // fma vs separate multiply-add (distinguishes fused from unfused).
    volatile double a = 1.0 + 0x1p-30, b = 1.0 - 0x1p-30, c = -1.0;
    volatile double prod = a * b;
    printf("fma=%a mul_then_add=%a\n", fma(a, b, c), prod + c);
    volatile float af = 1.0f + 0x1p-13f, bf = 1.0f - 0x1p-13f, cf = -1.0f;
    printf("fmaf=%a\n", (double)fmaf(af, bf, cf));
    for (int i = -12; i <= 12; i++) {
        double x = i * 0.75 + 0.25 * (i & 1);
        printf("lrint(%g)=%ld llround=%lld lround=%ld ilogb=%d logb=%g frexp=", x, lrint(x), llround(x), lround(x),
               x != 0 ? ilogb(x) : 0, x != 0 ? logb(x) : 0.0);
        int e;
        double m = frexp(x, &e);
        double ip;
        double fp = modf(x, &ip);
        printf("%g*2^%d ldexp=%g modf=%g,%g scalbn=%g\n", m, e, ldexp(x, i), ip, fp, scalbn(x, -i));
    }
    // Accumulated series to make small errors grow visible.
    double s = 0;
    float sf = 0;
    for (int i = 1; i <= 20000; i++) {
        s += sin(i * 0.001) * exp(-i * 1e-4) + log1p(i) / sqrt(i);
        sf += sinf(i * 0.001f) * expf(-i * 1e-4f) + log1pf((float)i) / sqrtf((float)i);
    }
    printf("series: %.17g %.9g\n", s, (double)sf);
    return 0;
}
