// IEEE edge cases: exception flags (FPSR via fenv), rounding modes (FPCR), subnormals,
// signed zeros, NaN payloads/propagation, float<->double<->half conversions, FZ flush mode,
// libm under non-default rounding modes.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <fenv.h>
#include <float.h>

static uint64_t db(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static uint32_t fb(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static double bd(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }

static void flags(const char *what)
{
    int f = fetestexcept(FE_ALL_EXCEPT);
    printf("%-28s flags:%s%s%s%s%s%s\n", what, f & FE_INVALID ? " invalid" : "", f & FE_DIVBYZERO ? " divbyzero" : "",
           f & FE_OVERFLOW ? " overflow" : "", f & FE_UNDERFLOW ? " underflow" : "", f & FE_INEXACT ? " inexact" : "",
           f ? "" : " none");
    feclearexcept(FE_ALL_EXCEPT);
}

int main(void)
{
    volatile double zero = 0.0, one = 1.0, three = 3.0, big = DBL_MAX, tiny = DBL_MIN, mone = -1.0;
    volatile double r;
    feclearexcept(FE_ALL_EXCEPT);
    r = one + one; flags("1+1");
    r = one / three; flags("1/3");
    r = one / zero; flags("1/0"); printf("  = %g\n", r);
    r = zero / zero; flags("0/0"); printf("  = %g sign=%d\n", r, signbit(r) != 0);
    r = big * 2.0; flags("DBL_MAX*2"); printf("  = %g\n", r);
    r = tiny / 3.0; flags("DBL_MIN/3"); printf("  = %a\n", r);
    r = sqrt(mone); flags("sqrt(-1)"); printf("  sign=%d\n", signbit(r) != 0);
    r = tiny * 0.5; flags("DBL_MIN*0.5 (exact)"); printf("  = %a\n", r);
    volatile float fbig = 3e38f;
    volatile float fr = fbig * 10.0f; flags("float overflow"); printf("  = %g\n", (double)fr);
    volatile double huge = 1e30;
    volatile int iv = (int)huge; flags("(int)1e30"); printf("  = %d\n", iv);

    // Signed zeros
    printf("-0+0=%g  -0*-1=%g  1/-0=%g  -0==0:%d  copysign=%g\n", -zero + zero, -zero * mone, one / -zero, -zero == zero,
           copysign(3.0, -zero));
    feclearexcept(FE_ALL_EXCEPT);

    // Subnormals
    double sub = bd(1);
    printf("min subnormal=%a *2=%a /2=%a nextafter(0,1)=%a\n", sub, sub * 2, sub / 2, nextafter(0.0, 1.0));
    printf("subnormal sum=%a fpclassify=%d isnormal=%d\n", bd(0x000fffffffffffffULL) + bd(1), fpclassify(bd(5)), isnormal(bd(5)));
    flags("after subnormal ops");

    // NaN payload propagation (AArch64 default NaN mode off: payload of first NaN operand is kept, quieted).
    volatile double snan = bd(0x7ff0000000000123ULL), qnan = bd(0x7ff8000000000456ULL);
    volatile double a1 = snan + one, a2 = qnan + one, a3 = one * qnan, a4 = qnan + snan, a5 = zero / zero;
    printf("nan bits: snan+1=%016llx qnan+1=%016llx 1*qnan=%016llx qnan+snan=%016llx 0/0=%016llx\n",
           (unsigned long long)db(a1), (unsigned long long)db(a2), (unsigned long long)db(a3), (unsigned long long)db(a4),
           (unsigned long long)db(a5));
    volatile float fsnan, fq = 0;
    uint32_t fsn = 0x7f800001u;
    memcpy((void *)&fsnan, &fsn, 4);
    fq = fsnan * 2.0f;
    printf("float snan*2=%08x (double)snan=%016llx\n", fb(fq), (unsigned long long)db((double)fsnan));
    flags("after nan ops");
    printf("fmin(nan,1)=%g fmax(1,nan)=%g fmin(-0,0) sign=%d\n", fmin(qnan, one), fmax(one, qnan), signbit(fmin(-zero, zero)) != 0);

    // Conversions
    volatile double dv = 1.0 + 0x1p-30;
    volatile float f = (float)dv;
    printf("double->float %a -> %a\n", dv, (double)f);
    double vals[] = {0.5, 1.5, 2.5, -0.5, -1.5, 1e10, -1e10, 65504.0, 65520.0, 1e-8};
    for (int i = 0; i < 10; i++) {
        __fp16 h = (__fp16)vals[i];
        uint16_t hb;
        memcpy(&hb, &h, 2);
        printf("fp16(%g)=%04x back=%g  (long)%g=%ld (unsigned)%g=%u\n", vals[i], hb, (double)h, vals[i], (long)vals[i],
               vals[i], vals[i] >= 0 && vals[i] < 4e9 ? (unsigned)vals[i] : 0u);
    }
    feclearexcept(FE_ALL_EXCEPT);

    // Rounding modes on arithmetic and conversions
    int modes[] = {FE_TONEAREST, FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
    const char *names[] = {"nearest", "up", "down", "zero"};
    for (int m = 0; m < 4; m++) {
        fesetround(modes[m]);
        volatile double x = 1.0, y = 3.0;
        volatile float xf = 1.0f, yf = 3.0f;
        volatile double big2 = 0x1.fffffffffffffp+1023;
        printf("%-8s getround_ok=%d 1/3=%a -1/3=%a f1/3=%a max+max/2^53=%g (float)0.1=%a llrint(2.5)=%lld\n", names[m],
               fegetround() == modes[m], x / y, -x / y, (double)(xf / yf), big2 + big2 * 0x1p-53, (double)(float)0.1,
               llrint(2.5));
    }
    fesetround(FE_TONEAREST);
    feclearexcept(FE_ALL_EXCEPT);

    // libm functions under non-default rounding modes.
    for (int m = 0; m < 4; m++) {
        fesetround(modes[m]);
        volatile double one = 1.0, three = 3.0, x = -2.5, y = 2.5;
        printf("%s: 1/3=%.17g -1/3=%.17g rint(-2.5)=%g rint(2.5)=%g lrint(3.5)=%ld nearbyint(-0.5)=%g sqrt2=%.17g exp1=%.17g\n",
               names[m], one / three, -one / three, rint(x), rint(y), lrint(3.5), nearbyint(-0.5), sqrt(2.0 * one), exp(one));
    }
    fesetround(FE_TONEAREST);
    feclearexcept(FE_ALL_EXCEPT);

    // Flush-to-zero via FPCR.FZ (bit 24).
    uint64_t fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    uint64_t saved = fpcr;
    __asm__ volatile("msr fpcr, %0" ::"r"(fpcr | (1ULL << 24)));
    volatile double s1 = bd(0x0000000000001000ULL), s2 = 2.0;
    volatile double fz = s1 * s2;
    __asm__ volatile("msr fpcr, %0" ::"r"(saved));
    volatile double nofz = s1 * s2;
    printf("FZ: %a  no FZ: %a\n", fz, nofz);
    // Default-NaN mode FPCR.DN (bit 25).
    __asm__ volatile("msr fpcr, %0" ::"r"(saved | (1ULL << 25)));
    volatile double dn = qnan + one;
    __asm__ volatile("msr fpcr, %0" ::"r"(saved));
    printf("DN: %016llx\n", (unsigned long long)db(dn));
    feclearexcept(FE_ALL_EXCEPT);
    flags("end");
    return 0;
}
